# libFuzzer target for the safetensors parser, built with clang++ (libFuzzer and the
# sanitizers need clang; the rest of the tree may use another compiler). It compiles
# only the parser's own sources (dtype, shape, src/io safetensors files), so it never
# depends on GPU code. The ctest test runs a bounded number of iterations from the
# committed seed corpus; new inputs go to a scratch corpus in the build tree.
if(FORGE_FUZZ)
  find_program(FORGE_FUZZ_CXX NAMES clang++ clang++-14)
  if(NOT FORGE_FUZZ_CXX)
    message(STATUS "forge: clang++ not found, fuzz targets skipped")
  else()
    message(STATUS "forge: fuzz targets with ${FORGE_FUZZ_CXX}")
    set(FORGE_FUZZ_SOURCES
        ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_safetensors.cpp
        ${CMAKE_SOURCE_DIR}/src/core/dtype.cpp
        ${CMAKE_SOURCE_DIR}/src/core/shape.cpp
        ${CMAKE_SOURCE_DIR}/src/io/st_dtype.cpp
        ${CMAKE_SOURCE_DIR}/src/io/json_strict.cpp
        ${CMAKE_SOURCE_DIR}/src/io/mapped_file.cpp
        ${CMAKE_SOURCE_DIR}/src/io/safetensors_header.cpp
        ${CMAKE_SOURCE_DIR}/src/io/safetensors_file.cpp
        ${CMAKE_SOURCE_DIR}/src/io/safetensors_write.cpp
        ${CMAKE_SOURCE_DIR}/src/io/tensor_convert.cpp)
    set(FORGE_FUZZ_HEADERS
        ${CMAKE_SOURCE_DIR}/include/forge/safetensors.h ${CMAKE_SOURCE_DIR}/include/forge/dtype.h
        ${CMAKE_SOURCE_DIR}/include/forge/shape.h ${CMAKE_SOURCE_DIR}/include/forge/error.h
        ${CMAKE_SOURCE_DIR}/src/io/json_strict.h ${CMAKE_SOURCE_DIR}/src/io/mapped_file.h)
    set(FORGE_FUZZ_BIN ${CMAKE_CURRENT_BINARY_DIR}/fuzz/fuzz_safetensors)
    file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fuzz)
    set(FORGE_FUZZ_JSON_INCLUDES $<TARGET_PROPERTY:nlohmann_json::nlohmann_json,INTERFACE_INCLUDE_DIRECTORIES>)
    add_custom_command(
      OUTPUT ${FORGE_FUZZ_BIN}
      COMMAND ${FORGE_FUZZ_CXX} -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined
              -fno-sanitize-recover=undefined -I${CMAKE_SOURCE_DIR}/include -I${CMAKE_SOURCE_DIR}/src
              "$<$<BOOL:${FORGE_FUZZ_JSON_INCLUDES}>:-I$<JOIN:${FORGE_FUZZ_JSON_INCLUDES},;-I>>"
              ${FORGE_FUZZ_SOURCES} -o ${FORGE_FUZZ_BIN}
      DEPENDS ${FORGE_FUZZ_SOURCES} ${FORGE_FUZZ_HEADERS}
      COMMAND_EXPAND_LISTS
      COMMENT "Building libFuzzer target fuzz_safetensors with ${FORGE_FUZZ_CXX}")
    add_custom_target(fuzz_safetensors ALL DEPENDS ${FORGE_FUZZ_BIN})

    set(FORGE_FUZZ_SCRATCH ${CMAKE_CURRENT_BINARY_DIR}/fuzz/corpus_scratch)
    file(MAKE_DIRECTORY ${FORGE_FUZZ_SCRATCH})
    add_test(NAME fuzz_safetensors
             COMMAND ${FORGE_FUZZ_BIN} -runs=200000 -max_total_time=60 -timeout=10 -rss_limit_mb=2048
                     -dict=${CMAKE_CURRENT_SOURCE_DIR}/fuzz/safetensors.dict
                     ${FORGE_FUZZ_SCRATCH} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus)
    set_tests_properties(fuzz_safetensors PROPERTIES TIMEOUT 180 LABELS fuzz)
  endif()
endif()
