# libFuzzer targets for the parsers of files forge reads, built with clang++
# (libFuzzer needs clang; the rest of the tree may use another compiler) under
# AddressSanitizer and UndefinedBehaviorSanitizer. Each compiles only the
# sources its parser needs, so it never depends on GPU code. Its ctest test
# runs a fixed number of inputs from the committed seed corpus (tests/fuzz/
# corpus*/); new inputs go to a scratch corpus in the build tree. A crash
# input found there becomes a file in the seed corpus and a unit test.
if(FORGE_FUZZ)
  find_program(FORGE_FUZZ_CXX NAMES clang++ clang++-14)
  if(NOT FORGE_FUZZ_CXX)
    message(STATUS "forge: clang++ not found, fuzz targets skipped")
  else()
    message(STATUS "forge: fuzz targets with ${FORGE_FUZZ_CXX}")
    # Iterations per target in CI (each run takes well under a minute).
    set(FORGE_FUZZ_RUNS 20000 CACHE STRING "Inputs each fuzz test runs")
    file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fuzz)
    set(FORGE_FUZZ_JSON_INCLUDES $<TARGET_PROPERTY:nlohmann_json::nlohmann_json,INTERFACE_INCLUDE_DIRECTORIES>)

    # The tokenizer's regex engine and Unicode tables, for targets that link src/text.
    set(FORGE_FUZZ_LIBS ${ONIG_LDFLAGS} ${ICU_LDFLAGS})
    # Every source is compiled once into build/tests/fuzz/obj (one Ninja job
    # each, so they build in parallel) and shared by the targets that link it;
    # the link adds libFuzzer's main. Headers are tracked through depfiles.
    set(FORGE_FUZZ_FLAGS -std=c++20 -g -O1 -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -I${CMAKE_SOURCE_DIR}/include
        -I${CMAKE_SOURCE_DIR}/src -I${CMAKE_SOURCE_DIR}/tools/forge)
    # forge_fuzz_object(OUT_VAR SOURCE): the object file of SOURCE, compiled
    # through the build's compiler launcher (ccache, scripts/ccache-env.sh) when
    # it has one.
    function(forge_fuzz_object out src)
      file(RELATIVE_PATH rel ${CMAKE_SOURCE_DIR} ${src})
      string(REPLACE "/" "_" rel ${rel})
      set(obj ${CMAKE_CURRENT_BINARY_DIR}/fuzz/obj/${rel}.o)
      get_property(done GLOBAL PROPERTY FORGE_FUZZ_OBJ_${rel})
      if(NOT done)
        set_property(GLOBAL PROPERTY FORGE_FUZZ_OBJ_${rel} TRUE)
        add_custom_command(
          OUTPUT ${obj}
          COMMAND ${CMAKE_CXX_COMPILER_LAUNCHER} ${FORGE_FUZZ_CXX} ${FORGE_FUZZ_FLAGS}
                  "$<$<BOOL:${FORGE_FUZZ_JSON_INCLUDES}>:-I$<JOIN:${FORGE_FUZZ_JSON_INCLUDES},;-I>>"
                  -MD -MF ${obj}.d -c ${src} -o ${obj}
          DEPENDS ${src}
          DEPFILE ${obj}.d
          COMMAND_EXPAND_LISTS
          COMMENT "Compiling ${rel} for the fuzz targets")
      endif()
      set(${out} ${obj} PARENT_SCOPE)
    endfunction()
    file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fuzz/obj)
    # forge_fuzz_target(NAME CORPUS DICT [OPTIONS...] SOURCES...): DICT may be
    # ""; OPTIONS are libFuzzer flags ("-max_len=N"; a later -runs overrides).
    function(forge_fuzz_target name corpus dict)
      set(bin ${CMAKE_CURRENT_BINARY_DIR}/fuzz/${name})
      set(options "")
      set(sources ${ARGN})
      list(GET sources 0 first)
      while(first MATCHES "^-")
        list(APPEND options ${first})
        list(POP_FRONT sources)
        list(GET sources 0 first)
      endwhile()
      set(objs "")
      foreach(src ${sources})
        forge_fuzz_object(obj ${src})
        list(APPEND objs ${obj})
      endforeach()
      add_custom_command(
        OUTPUT ${bin}
        COMMAND ${FORGE_FUZZ_CXX} -fsanitize=fuzzer,address,undefined ${objs} ${FORGE_FUZZ_LIBS} -o ${bin}
        DEPENDS ${objs}
        COMMAND_EXPAND_LISTS
        COMMENT "Linking libFuzzer target ${name}")
      add_custom_target(${name} ALL DEPENDS ${bin})
      set(scratch ${CMAKE_CURRENT_BINARY_DIR}/fuzz/${name}_scratch)
      file(MAKE_DIRECTORY ${scratch})
      set(dict_arg "")
      if(dict)
        set(dict_arg -dict=${dict})
      endif()
      add_test(NAME ${name}
               COMMAND ${bin} -runs=${FORGE_FUZZ_RUNS} -max_total_time=120 -timeout=10 -rss_limit_mb=2048
                       ${options} ${dict_arg} -artifact_prefix=${CMAKE_CURRENT_BINARY_DIR}/fuzz/${name}- ${scratch} ${corpus})
      set_tests_properties(${name} PROPERTIES TIMEOUT 240 LABELS fuzz)
    endfunction()

    set(S ${CMAKE_SOURCE_DIR}/src)
    set(F ${CMAKE_CURRENT_SOURCE_DIR}/fuzz)
    set(FORGE_FUZZ_CORE ${S}/core/dtype.cpp ${S}/core/shape.cpp)
    forge_fuzz_target(fuzz_safetensors ${F}/corpus ${F}/safetensors.dict
                      ${F}/fuzz_safetensors.cpp ${FORGE_FUZZ_CORE} ${S}/io/st_dtype.cpp ${S}/io/json_strict.cpp
                      ${S}/io/mapped_file.cpp ${S}/io/safetensors_header.cpp ${S}/io/safetensors_file.cpp
                      ${S}/io/safetensors_write.cpp ${S}/io/tensor_convert.cpp)
    # LoRA adapter folders (adapter_config.json + adapter_model.safetensors)
    # read against a one-layer model's Linears, without the model.
    forge_fuzz_target(fuzz_adapter ${F}/corpus_adapter ${F}/adapter.dict
                      ${F}/fuzz_adapter.cpp ${FORGE_FUZZ_CORE} ${S}/models/lora_files.cpp ${S}/io/st_dtype.cpp
                      ${S}/io/json_strict.cpp ${S}/io/config_reader.cpp ${S}/io/mapped_file.cpp
                      ${S}/io/safetensors_header.cpp ${S}/io/safetensors_file.cpp ${S}/io/tensor_convert.cpp)
    forge_fuzz_target(fuzz_config ${F}/corpus_config ${F}/config.dict
                      ${F}/fuzz_config.cpp ${FORGE_FUZZ_CORE} ${S}/io/st_dtype.cpp ${S}/io/model_config.cpp
                      ${S}/io/config_reader.cpp ${S}/io/json_strict.cpp ${S}/io/weight_layout.cpp)
    # Token files and training text: the readers, the byte tokenizer and the
    # window sampler (host tensors only; the BPE code links but is not driven).
    file(GLOB_RECURSE FORGE_FUZZ_TEXT CONFIGURE_DEPENDS ${S}/text/*.cpp)
    forge_fuzz_target(fuzz_train_data ${F}/corpus_train_data ""
                      ${F}/fuzz_train_data.cpp ${CMAKE_SOURCE_DIR}/tools/forge/train_data.cpp ${FORGE_FUZZ_CORE}
                      ${S}/core/tensor.cpp ${S}/core/device.cpp ${S}/core/host_heap.cpp ${FORGE_FUZZ_TEXT})
    # Request bodies of forge serve's completion endpoints.
    forge_fuzz_target(fuzz_serve_request ${F}/corpus_serve_request ""
                      ${F}/fuzz_serve_request.cpp ${S}/serve/request.cpp)
    # tokenizer.json: the loaders and the whole encode / decode pipeline
    # (Oniguruma regexes, ICU normalization). The seeds are released
    # tokenizers cut to a few hundred tokens.
    forge_fuzz_target(fuzz_tokenizer ${F}/corpus_tokenizer ${F}/tokenizer.dict
                      ${F}/fuzz_tokenizer.cpp ${FORGE_FUZZ_TEXT})
  endif()
endif()
