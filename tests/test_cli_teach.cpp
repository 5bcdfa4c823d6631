// Tests of `attnscope cost` and `attnscope zoo`, and the app's --bug / --follow option checks.
#include <doctest/doctest.h>

#include "run_attnscope.hpp"

using attnscope::testing::run_attnscope;

TEST_CASE("cost prints every step and the totals and why h does not change the parameters") {
    const auto r = run_attnscope("cost -B 1 -N 197 -C 768 --heads 12 --qkv-bias");
    CHECK(r.status == 0);
    CHECK(r.out.find("(2362368)") != std::string::npos);  // 4 * 768^2 + 4 * 768
    CHECK(r.out.find("2 B N^2 C") != std::string::npos);
    CHECK(r.out.find("does not depend on h") != std::string::npos);
    for (const char* step : {"qkv_heads", "scores", "merged", "out_drop"}) CHECK(r.out.find(step) != std::string::npos);
    const auto bad = run_attnscope("cost -C 100 --heads 8");
    CHECK(bad.status == 2);
    CHECK(bad.err.find("--heads") != std::string::npos);
}

TEST_CASE("zoo lists the bugs and runs one and refuses an unknown one in one line") {
    const auto list = run_attnscope("zoo");
    CHECK(list.status == 0);
    CHECK(list.out.find("k-not-transposed") != std::string::npos);
    const auto knt = run_attnscope("zoo --bug k-not-transposed -B 2 -N 5 -C 24 --heads 4");
    CHECK(knt.status == 0);
    CHECK(knt.out.find("operand q w/ shape [2, 4, 5, 6] and operand k w/ shape [2, 4, 5, 6]") != std::string::npos);
    CHECK(knt.out.find("caught by a shape error") != std::string::npos);
    const auto soft = run_attnscope("zoo --bug softmax-dim-2");
    CHECK(soft.out.find("caught by the row-sum check at attn") != std::string::npos);
    const auto bad = run_attnscope("zoo --bug nope");
    CHECK(bad.status == 2);
    CHECK(bad.err.find("--bug nope") != std::string::npos);
    CHECK(bad.err.find('\n') == bad.err.size() - 1);
}

TEST_CASE("the app refuses an unknown bug or a followed element outside its step") {
    for (const char* args :
         {"--bug nope --screenshot /tmp/never.png", "--follow \"scores[0,0,0,99]\" --screenshot /tmp/never.png",
          "--follow \"nope[0]\" --screenshot /tmp/never.png", "--follow scores --screenshot /tmp/never.png"}) {
        CAPTURE(args);
        const auto r = run_attnscope(args);
        CHECK(r.status == 2);
        CHECK(r.err.rfind("attnscope: ", 0) == 0);
    }
}
