# The browser build (preset `wasm`, Emscripten): the library with the CPU
# backend, the WebGPU ops on the page's navigator.gpu (web/src/browser_runtime.cpp)
# and the embind module web/forge.js imports. No OpenBLAS, OpenMP, Dawn, libcurl
# (the hub), the HTTP server or the threads they need; the tokenizer's regexes
# and Unicode tables come from the page's JavaScript (web/src/regex_js.cpp,
# unicode_js.cpp) instead of Oniguruma and ICU.

file(GLOB_RECURSE FORGE_SOURCES CONFIGURE_DEPENDS src/*.cpp)
list(FILTER FORGE_SOURCES EXCLUDE REGEX "/src/(webgpu/dawn|hub|serve)/")
list(APPEND FORGE_SOURCES "${CMAKE_SOURCE_DIR}/src/webgpu/dawn/wgsl_bindings.cpp")  # WGSL text only, no Dawn
list(FILTER FORGE_SOURCES EXCLUDE REGEX "/src/text/(regex_onig|unicode_icu)\\.cpp$")
file(GLOB FORGE_WEB_LIB_SOURCES CONFIGURE_DEPENDS web/src/lib/*.cpp)  # the library's browser parts
file(GLOB FORGE_WEB_SOURCES CONFIGURE_DEPENDS web/src/*.cpp)          # the embind module
# Model folders in Hugging Face's layout, written as the CLI writes them (the page's download).
list(APPEND FORGE_WEB_SOURCES "${CMAKE_SOURCE_DIR}/tools/forge/hf_model_out.cpp")

# nlohmann/json is header-only: its headers from the host, nothing else of /usr/include.
set(FORGE_WEB_INCLUDE "${CMAKE_BINARY_DIR}/host_include")
file(MAKE_DIRECTORY "${FORGE_WEB_INCLUDE}")
if(NOT EXISTS "${FORGE_WEB_INCLUDE}/nlohmann")
  file(CREATE_LINK /usr/include/nlohmann "${FORGE_WEB_INCLUDE}/nlohmann" SYMBOLIC)
endif()

add_library(forge STATIC ${FORGE_SOURCES} ${FORGE_WEB_LIB_SOURCES})
target_include_directories(forge PUBLIC include "${FORGE_WEB_INCLUDE}" PRIVATE src)
target_compile_options(forge PUBLIC "SHELL:-include ${CMAKE_SOURCE_DIR}/web/src/lib/compat.h")
target_compile_options(forge PRIVATE -Wall -Wextra -Wno-unused-parameter -ffp-contract=off -fno-math-errno)
target_compile_options(forge PUBLIC -fexceptions)
target_compile_definitions(forge PUBLIC FORGE_VERSION="${PROJECT_VERSION}" FORGE_HAVE_WEBGPU=1)
set_source_files_properties(src/text/jinja/value.cpp PROPERTIES
  COMPILE_OPTIONS "-include;${CMAKE_SOURCE_DIR}/web/src/lib/compat_to_chars.h")
forge_embed_shaders(forge "${CMAKE_SOURCE_DIR}/src/webgpu/shaders")

add_executable(forge_web ${FORGE_WEB_SOURCES})
set_target_properties(forge_web PROPERTIES OUTPUT_NAME forge_wasm SUFFIX ".js")
target_include_directories(forge_web PRIVATE src tools/forge)
target_link_libraries(forge_web PRIVATE forge)
# The link's optimisation level (Binaryen's passes after Asyncify's): -O2
# gives a module within 2% of -O3's size in half -O3's link time (3.46 vs
# 3.40 MB; 91 vs 177 s on two busy cores; -O1: 26 s but 7.9 MB and slower
# tests), and the link is most of a rebuild whose objects come from ccache.
# Placed after the build type's -O3, so it is the one em++ takes.
set(FORGE_WEB_LINK_OPT "-O2" CACHE STRING "Optimisation level of the wasm link (-O1, -O2, -O3, -Os)")
# Asyncify lets the C++ code wait on the page's promises (fetches, GPU read
# backs) as if they were blocking calls. The memory is imported, so a page can
# give the module a smaller maximum than 4 GB (forge.js settings.maxHeapBytes).
target_link_options(forge_web PRIVATE
  ${FORGE_WEB_LINK_OPT} --bind -fexceptions -sASYNCIFY -sASYNCIFY_STACK_SIZE=1048576 -sALLOW_MEMORY_GROWTH=1
  -sMAXIMUM_MEMORY=4GB -sIMPORTED_MEMORY=1 -sMODULARIZE=1 -sEXPORT_ES6=1 -sEXPORT_NAME=createForgeModule
  -sENVIRONMENT=web,worker -sFILESYSTEM=1 -sEXPORTED_RUNTIME_METHODS=FS,ccall
  -sEXPORTED_FUNCTIONS=_malloc,_free)
