# Embeds every .wgsl file of a folder into the target as a C++ string:
# src/webgpu/shaders/matmul.wgsl becomes forge::shaders::matmul (a std::string_view),
# declared in the generated header "forge_shaders.h".
function(forge_embed_shaders target dir)
  file(GLOB wgsl_files CONFIGURE_DEPENDS "${dir}/*.wgsl")
  set(out_dir "${CMAKE_BINARY_DIR}/generated")
  set(header "${out_dir}/forge_shaders.h")
  set(source "${out_dir}/forge_shaders.cpp")
  add_custom_command(
    OUTPUT "${header}" "${source}"
    COMMAND ${CMAKE_COMMAND} -DOUT_HEADER=${header} -DOUT_SOURCE=${source} -DSHADER_DIR=${dir}
            -P "${CMAKE_SOURCE_DIR}/cmake/embed_shaders_script.cmake"
    DEPENDS ${wgsl_files} "${CMAKE_SOURCE_DIR}/cmake/embed_shaders_script.cmake"
    COMMENT "Embedding WGSL shaders")
  target_sources(${target} PRIVATE "${source}")
  target_include_directories(${target} PRIVATE "${out_dir}")
endfunction()
