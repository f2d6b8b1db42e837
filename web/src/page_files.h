// A model's .safetensors files as the page holds them (Blobs: a fetched
// response, a Cache API entry, a file from the user's disk), read into the
// heap one tensor at a time (SafetensorsFile::from_source). forge.js lists
// them in Module.forgeFiles, by their path in the model's folder, for the
// length of forge_open; a path not listed is looked for in the module's
// file system.
#pragma once
#include "forge/safetensors.h"

namespace forge::web {

SafetensorsFiles page_safetensors_files();

}  // namespace forge::web
