// The other kinds of file PyTorch users save: the legacy torch.save format, modules pickled whole,
// hostile whole modules. Truth from outside: tests/data/saved/ is written by
// tools/make_saved_kinds_fixtures.py with torch.save itself; expected.npz holds every tensor as
// torch.load returns it, the logits and outputs are the modules' own forward.
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "activations.hpp"
#include "diagnose.hpp"
#include "heads.hpp"
#include "io.hpp"
#include "pickle.hpp"
#include "run_attnscope.hpp"
#include "tensor_source.hpp"
#include "vit.hpp"
#include "vit_fixtures.hpp"

using namespace attnscope;
using namespace attnscope::testing;
using namespace std::string_literals;
namespace fs = std::filesystem;

namespace {

const fs::path kData = fs::path(ATTNSCOPE_TEST_DATA) / "saved";
constexpr std::uint64_t kNoLimit = UINT64_MAX;

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

bool same_bits(const Array& a, const Array& b) {
    return shape_of(a) == shape_of(b) && (a.size() == 0 || std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
}

// The file's bytes with `edit` applied, written to a temporary file named `name`.
fs::path edited(const fs::path& from, const std::string& name, void (*edit)(std::string&)) {
    std::ifstream in(from, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    edit(bytes);
    const fs::path out = fs::temp_directory_path() / ("attnscope_saved_" + std::to_string(::getpid()) + "_" + name);
    std::ofstream(out, std::ios::binary) << bytes;
    return out;
}

std::string open_error(const fs::path& path) {
    try {
        TensorSource::open(path.string());
    } catch (const FileError& e) {
        return e.what();
    }
    return "";
}

void check_logits(const VitModel& model) {
    const VitTrace t = run_vit(model, Tensor{read_npy((kData / "whole" / "pixels.npy").string()), {}});
    CHECK(worst_vs_torch_scale(t.logits(), read_npy((kData / "whole" / "logits.npy").string())) <= 1.0);  // 2e-5 of the largest
}

}  // namespace

TEST_CASE("legacy files and whole modules list the names torch.load gives and load its values bit for bit") {
    const TensorSource expected = TensorSource::open((kData / "expected.npz").string());
    std::map<std::string, std::vector<std::string>> by_file;
    for (const TensorInfo& t : expected.tensors()) {
        const std::size_t cut = t.name.find('/', t.name.find('/') + 1);
        by_file[t.name.substr(0, cut)].push_back(t.name.substr(cut + 1));
    }
    REQUIRE(by_file.size() == 12);
    std::size_t compared = 0;
    for (const auto& [file, names] : by_file) {
        CAPTURE(file);
        const TensorSource source = TensorSource::open((kData / file).string());
        const bool legacy = file.rfind("legacy/", 0) == 0 || file == "numpy/legacy.pt";
        CHECK(source.format() == (legacy ? "torch.save (legacy)" : "torch.save"));
        std::size_t tensors = 0;
        for (const TensorInfo& t : source.tensors()) tensors += t.listed_only ? 0 : 1;
        CHECK(tensors == names.size());  // nothing more: a whole module's non-persistent buffer is left out
        for (const std::string& name : names) {
            CAPTURE(name);
            REQUIRE(source.find(name));
            CHECK(same_bits(source.load(name), expected.load(file + "/" + name)));
            ++compared;
        }
    }
    CHECK(compared == 186);
    // The views of one root storage: 'a' from element 2, 'b' from element 6 with strides (1, 3).
    const TensorSource views = TensorSource::open((kData / "legacy" / "views.pt").string());
    CHECK(views.load("b").data()[1] == 3.0f);  // b[0, 1] = root[6 + 1 + 3] = 10 * 0.5 - 2
}

TEST_CASE("a legacy checkpoint and a whole module say their head count; a legacy state dict does not") {
    const TensorSource ckpt = TensorSource::open((kData / "legacy" / "checkpoint.pt").string());
    CHECK(ckpt.metadata().at("config.num_heads") == "4");
    CHECK(english(ckpt.find("epoch")->problem).find("'epoch' is an int (3), not a tensor") != std::string::npos);
    const TensorSource mha = TensorSource::open((kData / "whole" / "mha.pt").string());
    CHECK(mha.metadata().at("num_heads") == "4");  // the module's attributes, not listed as tensors
    CHECK(mha.metadata().at("head_dim") == "4");
    CHECK_FALSE(mha.find("num_heads"));
    CHECK_FALSE(mha.find("causal"));  // a non-persistent buffer

    CHECK_THROWS_AS(load_vit_model((kData / "legacy" / "vit.pth").string(), std::nullopt, kNoLimit), HeadsUnknown);
    check_logits(load_vit_model((kData / "legacy" / "vit.pth").string(), 4, kNoLimit));
    for (const char* file : {"whole/vit.pt", "whole/checkpoint.pt"}) {
        CAPTURE(file);
        const VitModel m = load_vit_model((kData / file).string(), std::nullopt, kNoLimit);
        CHECK(m.config.heads == 4);
        CHECK(english(m.heads_from).find("encoder.layers.encoder_layer_0.") != std::string::npos);
        CHECK(english(m.heads_from).find("num_heads in the file") != std::string::npos);
        check_logits(m);
    }
}

TEST_CASE("numpy values in a checkpoint: scalars are read, an array is listed, the head count comes from them") {
    for (const char* file : {"numpy/checkpoint.pt", "numpy/legacy.pt"}) {
        CAPTURE(file);
        const TensorSource source = TensorSource::open((kData / file).string());
        CHECK(source.metadata().at("config.num_heads") == "4");  // np.int64(4)
        CHECK(english(source.find("epoch")->problem).find("'epoch' is an int (7), not a tensor") != std::string::npos);
        CHECK(english(source.find("best_acc")->problem).find("'best_acc' is a float (0.875), not a tensor") != std::string::npos);
        CHECK(english(source.find("class_weights")->problem).find("a numpy array [5] of f4") != std::string::npos);
        const VitModel m = load_vit_model((kData / file).string(), std::nullopt, kNoLimit);
        CHECK(m.config.heads == 4);
        CHECK(english(m.heads_from).find("config.num_heads") != std::string::npos);
        check_logits(m);
    }
    // scalar(dtype(code) with byte order, _codecs.encode(8 latin1 characters)), as protocol 2 writes it.
    auto scalar = [](const std::string& code, char order, const std::string& encoding) {
        const std::string bytes = "\x80\x02" "cnumpy.core.multiarray\nscalar\ncnumpy\ndtype\nX\x02\x00\x00\x00"s + code +
                                  "\x89\x88\x87R(K\x03X\x01\x00\x00\x00"s + order +
                                  "NNNJ\xff\xff\xff\xffJ\xff\xff\xff\xffK\x00tbc_codecs\nencode\nX\x09\x00\x00\x00"
                                  "\x00\x00\x00\x00\x00\x00\xc3\xb0?X"s + char(encoding.size()) + "\x00\x00\x00"s + encoding + "\x86R\x86R."s;
        return bytes;
    };
    auto read = [](const std::string& bytes) {
        return read_pickle(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), "p.pkl");
    };
    const Unpickled one = read(scalar("f8", '<', "latin1"));  // the bytes of 1.0: f0 3f at the end
    REQUIRE(one.root->kind == PickleValue::Kind::Float);
    CHECK(one.root->number == 1.0);
    const Unpickled complex = read(scalar("c8", '<', "latin1"));
    CHECK(complex.root->kind == PickleValue::Kind::Other);
    CHECK(complex.root->text == "a numpy c8 scalar");
    CHECK_THROWS_WITH(read(scalar("f8", '>', "latin1")), doctest::Contains("big-endian"));
    CHECK_THROWS_WITH(read(scalar("f8", '<', "utf8")), doctest::Contains("_codecs.encode takes a str and 'latin1'"));
    CHECK_THROWS_WITH(read(scalar("i4", '<', "latin1")), doctest::Contains("dtype 'i4' has 8 bytes"));
}

TEST_CASE("command line: a whole module runs like its state dict and equals its forward; a legacy ViT needs --heads") {
    const fs::path dump = fs::temp_directory_path() / ("attnscope_saved_" + std::to_string(::getpid()) + "_dump");
    const ProcessResult r = run_attnscope("run --weights " + quoted(kData / "whole" / "mha.pt") + " --input " +
                                          quoted(kData / "whole" / "x.npy") + " --dump " + quoted(dump) + " --force");
    CAPTURE(r.err);
    REQUIRE(r.status == 0);
    CHECK(r.out.find("heads h = 4 from metadata num_heads") != std::string::npos);
    CHECK(worst_vs_torch(read_npy((dump / "out.npy").string()), read_npy((kData / "whole" / "mha_out.npy").string())) <= 1.0);
    fs::remove_all(dump);
    check_usage_error("vit --model " + quoted(kData / "legacy" / "vit.pth") + " --pixels " +
                          quoted(kData / "whole" / "pixels.npy"),
                      "pass --heads H with H one of 1, 2, 4, 8, 16, 32, 64");
    const ProcessResult ok = run_attnscope("vit --model " + quoted(kData / "whole" / "vit.pt") + " --pixels " +
                                           quoted(kData / "whole" / "pixels.npy"));
    CAPTURE(ok.err);
    CHECK(ok.status == 0);
    CHECK(ok.out.find("4 heads (encoder.layers.encoder_layer_0.") != std::string::npos);
}

TEST_CASE("a whole module carrying a call of subprocess, getattr, importlib or os.system is refused naming it") {
    struct Case {
        const char* file;
        const char* global;
    };
    for (const Case& c : {Case{"popen.pt", "commands.Popen"}, Case{"getattr.pt", "__builtin__.getattr"},
                          Case{"import_module.pt", "importlib.import_module"}, Case{"system.pt", "posix.system"}}) {
        CAPTURE(c.file);
        const fs::path file = kData / "hostile" / c.file;
        const ProcessResult r = run_attnscope("inspect " + quoted(file));
        CHECK(r.status == 2);
        CHECK(r.err == "attnscope: " + file.string() + ": pickle global '" + c.global +
                           "' can run code; attnscope never runs code from a file and refuses it (save tensors, dicts of "
                           "tensors or a model's state_dict())\n");
    }
    CHECK_FALSE(fs::exists("/tmp/attnscope_pwned"));
}

TEST_CASE("pickle: a class is an inert record; calling one is refused; a partial is never called") {
    auto error = [](const std::string& bytes) {
        try {
            read_pickle(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size(), "p.pkl");
        } catch (const FileError& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    // __main__.Model() with state {"n": 4}: an Object holding n.
    const std::string object = "\x80\x02" "c__main__\nModel\n)\x81}X\x01\x00\x00\x00nK\x04sb."s;
    const Unpickled u = read_pickle(reinterpret_cast<const std::uint8_t*>(object.data()), object.size(), "p.pkl");
    REQUIRE(u.root->kind == PickleValue::Kind::Object);
    CHECK(u.root->text == "__main__.Model");
    REQUIRE(u.root->entries.size() == 1);
    CHECK(u.root->entries[0].second->integer == 4);
    // REDUCE on a class: it would run the class's code.
    CHECK(error("\x80\x02" "c__main__\nModel\n)R."s).rfind("p.pkl: pickle calls '__main__.Model' to rebuild a value", 0) == 0);
    // NEWOBJ of something that is not a class record.
    CHECK(error("\x80\x02" "ccollections\nOrderedDict\n)\x81."s).find("NEWOBJ makes a type collections.OrderedDict") !=
          std::string::npos);
    // functools.partial(posix.system): refused for posix.system, not for partial.
    CHECK(error("\x80\x02" "cfunctools\npartial\nctorch.nn\nLayerNorm\n\x85R."s).empty());
    CHECK(error("\x80\x02" "cfunctools\npartial\ncposix\nsystem\n\x85R."s).find("'posix.system' can run code") !=
          std::string::npos);
}

TEST_CASE("legacy: a cut file, a storage count that lies, an unknown version: one line each") {
    const fs::path sd = kData / "legacy" / "state_dict.pt";
    const fs::path cut = edited(sd, "cut.pt", [](std::string& b) { b.resize(b.size() - 100); });
    CHECK(open_error(cut).find(cut.string() + ": storage '") == 0);
    CHECK(open_error(cut).find("bytes left") != std::string::npos);
    const fs::path no_storages = edited(sd, "no_storages.pt", [](std::string& b) {
        b.resize(b.rfind("\x80\x02]"));  // up to the storage list
    });
    CHECK(open_error(no_storages).find(no_storages.string() + ": malformed pickle") == 0);
    const fs::path version = edited(sd, "version.pt", [](std::string& b) {
        const std::size_t at = b.find("M\xe9\x03");  // BININT2 1001
        b[at + 1] = '\xea';
    });
    CHECK(open_error(version) ==
          version.string() + ": a legacy torch.save file of version an int (1002); attnscope reads version 1001");
    const fs::path big = edited(sd, "big_endian.pt", [](std::string& b) {
        const std::size_t at = b.find("little_endian");
        b[b.find('\x88', at)] = '\x89';  // NEWTRUE -> NEWFALSE
    });
    CHECK(open_error(big).find("written on a big-endian machine") != std::string::npos);
    for (const fs::path& p : {cut, no_storages, version, big}) fs::remove(p);
}

TEST_CASE("forward-hook captures: the attention maps are found by their values and named by their module") {
    const TensorSource expected = TensorSource::open((kData / "expected.npz").string());
    const TensorSource capture = TensorSource::open((kData / "hooks" / "vit_capture.pt").string());
    for (std::size_t block : {0u, 1u}) {
        CAPTURE(block);
        const std::string module = "encoder.layers.encoder_layer_" + std::to_string(block) + ".self_attention";
        const FileTrace t = trace_from_file(capture, block);
        CHECK(t.attention_maps_only);
        CHECK(t.blocks == std::vector<std::size_t>{0, 1});
        REQUIRE(t.trace.steps.size() == 1);
        const Step& attn = t.trace.steps[0];
        CHECK(attn.name == "attn");
        CHECK(attn.axes() == Axes{"B", "h", "N", "N'"});
        CHECK(same_bits(attn.tensor().values, expected.load("hooks/vit_capture.pt/" + module + ".1")));
        CHECK(t.trace.config.heads == 4);
        const std::vector<std::string> notes = english(t.notes);
        CHECK(std::find(notes.begin(), notes.end(),
                        "attention map of " + module + ": tensor '" + module + ".1' [1, 4, 17, 17], found by its values "
                        "(rows sum to 1)") != notes.end());
        REQUIRE(t.trace.checks.row_sums.size() == 1);
        CHECK(t.trace.checks.row_sums[0].ok());
        CHECK(t.trace.checks.row_sums[0].rows == 4 * 17);
    }
    // The heads' mean [B, N, N'] is one head [B, 1, N, N'], and the note says so.
    const FileTrace mean = trace_from_file(TensorSource::open((kData / "hooks" / "mean_capture.pt").string()), 1);
    REQUIRE(mean.trace.steps.size() == 1);
    CHECK(mean.trace.steps[0].shape() == Shape{1, 1, 17, 17});
    const std::vector<std::string> mean_notes = english(mean.notes);
    CHECK(std::any_of(mean_notes.begin(), mean_notes.end(), [](const std::string& n) {
        return n.find("the heads' mean [B, N, N'], shown as one head") != std::string::npos;
    }));
    // Outputs [1, 17, 64] and maps whose rows do not sum to 1 are not taken for attention.
    const std::vector<FileRole> roles = file_roles(capture);
    REQUIRE(roles.size() == 4);
    CHECK(roles[0].role.kind == RoleKind::None);
    CHECK(roles[1].by_values);
    CHECK(capture_module("a.b.self_attention.1") == "a.b.self_attention");
    CHECK(capture_module("attn_probs") == "attn_probs");
}

TEST_CASE("command line: a hook capture's tuples are listed by path and its maps row-checked") {
    const fs::path capture = kData / "hooks" / "vit_capture.pt";
    const ProcessResult r = run_attnscope("inspect " + quoted(capture));
    CAPTURE(r.err);
    CHECK(r.status == 0);
    CHECK(r.out.find("encoder.layers.encoder_layer_1.self_attention.0  F32    [1, 17, 64]") != std::string::npos);
    CHECK(r.out.find("attention map encoder.layers.encoder_layer_1.self_attention.1: All 68 rows sum to 1") !=
          std::string::npos);
    // check finds the maps' blocks by their values too.
    check_usage_error("check " + quoted(capture), "holds the steps of blocks 0, 1; choose one with --block I");
}

TEST_CASE("command line: a checkpoint's numbers beside its tensors are counted apart and shown by value") {
    const ProcessResult r = run_attnscope("inspect " + quoted(kData / "numpy" / "checkpoint.pt"));
    CAPTURE(r.err);
    CHECK(r.status == 0);
    // torchvision's ViT with 2 blocks: 32 tensors in its state dict; epoch, best_acc, config.num_heads, class_weights.
    CHECK(r.out.find("checkpoint.pt: torch.save, 32 tensors, 4 other values\n") != std::string::npos);
    CHECK(r.out.find("'best_acc' is a float (0.875), not a tensor") != std::string::npos);
}
