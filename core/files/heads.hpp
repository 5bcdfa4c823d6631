// How many heads a file's attention has. A state dict never says: its qkv weight [3C, C] is the
// same for 1 head of C or C/64 heads of 64. The count is taken, in this order, from
//
//   the user            --heads, or the app's heads control (the caller passes it)
//   the file            metadata num_heads (safetensors __metadata__, or a torch.save dict's
//                       top-level "num_heads": 4)
//   its configuration   a torch.save checkpoint's config, args, hparams or hyper_parameters entry
//                       holding num_heads, nhead, n_heads, heads or num_attention_heads (at any depth:
//                       hyper_parameters.model.num_heads); a model pickled whole: its modules'
//                       num_heads attributes (encoder.layers.encoder_layer_0.self_attention.num_heads);
//                       Hugging Face's config.json beside the file (num_attention_heads)
//   the architecture    a published ViT whose sizes identify it: torchvision's vit_b_16/b_32 (D 768,
//                       12 blocks), vit_l_16/l_32 (1024, 24), vit_h_14 (1280, 32); timm's and DeiT's
//                       tiny (192, 12), small (384, 12), base, large and huge, all with MLP 4 D
//
// and never guessed: when none of these says, HeadsUnknown names --heads and the counts that
// divide the dim. Where the count came from travels with it, to be shown beside it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "io.hpp"
#include "tensor_source.hpp"

namespace attnscope {

struct HeadCount {
    std::size_t heads = 0;
    Message from;  // "--heads", "metadata num_heads", "config.num_heads in the checkpoint",
                   // "num_attention_heads in config.json", "torchvision's vit_b_16 ... (D 768, 12 blocks)"
};

// The sizes the architecture table is matched on; mlp 0 when the file has no MLP (one attention layer).
struct ModelSizes {
    std::size_t dim = 0;
    std::size_t depth = 0;
    std::size_t mlp = 0;
};

// The count the file (metadata, configuration) or its architecture gives; nullopt when none does.
// FileError "path: ..." when the file says two different counts, a count that is not a positive
// whole number, or one that does not divide dim; or when config.json beside it is not JSON.
std::optional<HeadCount> heads_from_file(const TensorSource& source, const ModelSizes& sizes);

// The counts h with dim % h == 0, ascending.
std::vector<std::size_t> head_count_choices(std::size_t dim);
// The count whose head size dim / h is nearest ViT's usual 64 (a suggestion to confirm, never a default).
std::size_t head_count_suggestion(std::size_t dim);

// Thrown when nothing gives the count: "path: the file does not say how many heads its attention has
// (dim 64; no num_heads in its metadata or configuration, and no published ViT of its sizes); pass
// --heads H with H one of 1, 2, 4, 8, 16, 32, 64".
struct HeadsUnknown : FileError {
    HeadsUnknown(const std::string& path, std::size_t dim);
    std::size_t dim;
};

// `heads` as the user's HeadCount ("--heads"), else heads_from_file, else HeadsUnknown.
HeadCount resolve_heads(const TensorSource& source, const ModelSizes& sizes, std::optional<std::size_t> heads);

}  // namespace attnscope
