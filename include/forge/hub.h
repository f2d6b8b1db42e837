// Models by their Hugging Face id. `resolve_model("org/name@rev", opts)` gives
// a folder holding config.json, the tokenizer files and the safetensors
// weights, taken from the Hugging Face cache (the layout huggingface_hub,
// transformers and mlx-lm share) and downloaded into it when missing:
//
//   HUB_CACHE/models--org--name/
//     blobs/<etag>                  file contents, named by sha256 (LFS) or git blob sha1
//     snapshots/<commit>/<file>     relative symlinks into blobs/
//     refs/<revision>               the commit a branch or tag pointed to
//     .no_exist/<commit>/<file>     empty markers for files the repository lacks
//
//   std::filesystem::path dir = forge::resolve_model("org/name", forge::HubOptions::from_env());
//
// Errors are forge::IoError whose message starts with "[hub]" and names the
// repository, the file and the cause (not found, access denied, network,
// checksum mismatch, not in the cache while offline).
//
// Threads: resolve_model may run from several threads at once for different
// repositories; two calls that download the same file at once race on its
// blobs/<etag>.incomplete file.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

namespace forge {

struct HubOptions {
  std::string endpoint = "https://huggingface.co";  // HF_ENDPOINT
  // HF_HUB_CACHE, HF_HOME/hub, XDG_CACHE_HOME/huggingface/hub, ~/.cache/huggingface/hub
  // (resolve_model reads the environment when this is left empty).
  std::filesystem::path cache_dir;
  std::string token;                // HF_TOKEN, else the file HF_HOME/token; sent as "Authorization: Bearer"
  bool offline = false;             // HF_HUB_OFFLINE=1: the cache only, no network
  bool quiet = false;               // no progress bar or summary line on stderr

  // Every field from the environment as huggingface_hub reads it.
  static HubOptions from_env();
};

// A repository id with its revision: "org/name@rev" -> {"org/name", "rev"};
// the revision defaults to "main".
struct HubSpec {
  std::string repo;
  std::string revision;
};

// The spec as a hub id, or nothing when it is not of the form
// org/name[@revision] (letters, digits, '-', '_', '.'; neither part "." or "..").
std::optional<HubSpec> parse_hub_spec(const std::string& spec);

// A local file or folder is returned as is. Otherwise `spec` must be a hub id:
// its snapshot folder in the cache, complete (config.json, the weights, the
// tokenizer and adapter files the repository has), after downloading what is
// missing unless offline. Throws IoError when neither a path nor an id, or when
// the files cannot be had.
std::filesystem::path resolve_model(const std::string& spec, const HubOptions& options);

}  // namespace forge
