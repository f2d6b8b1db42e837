# libFuzzer target for the Jinja chat-template interpreter, built with clang++
# like fuzz_safetensors (see fuzz.cmake). It compiles only the interpreter's
# sources and the UTF-8 helpers; the seed corpus holds released models' templates.
if(FORGE_FUZZ AND FORGE_FUZZ_CXX)
  file(GLOB FORGE_FUZZ_JINJA_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/text/jinja/*.cpp)
  file(GLOB FORGE_FUZZ_JINJA_HEADERS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/text/jinja/*.h)
  set(FORGE_FUZZ_JINJA_ALL ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_chat_template.cpp ${FORGE_FUZZ_JINJA_SOURCES}
      ${CMAKE_SOURCE_DIR}/src/text/utf8.cpp)
  set(FORGE_FUZZ_JINJA_BIN ${CMAKE_CURRENT_BINARY_DIR}/fuzz/fuzz_chat_template)
  set(FORGE_FUZZ_JINJA_JSON $<TARGET_PROPERTY:nlohmann_json::nlohmann_json,INTERFACE_INCLUDE_DIRECTORIES>)
  add_custom_command(
    OUTPUT ${FORGE_FUZZ_JINJA_BIN}
    COMMAND ${FORGE_FUZZ_CXX} -std=c++20 -g -O1 -fsanitize=fuzzer,address,undefined
            -fno-sanitize-recover=undefined -I${CMAKE_SOURCE_DIR}/include -I${CMAKE_SOURCE_DIR}/src
            "$<$<BOOL:${FORGE_FUZZ_JINJA_JSON}>:-I$<JOIN:${FORGE_FUZZ_JINJA_JSON},;-I>>"
            ${FORGE_FUZZ_JINJA_ALL} -o ${FORGE_FUZZ_JINJA_BIN}
    DEPENDS ${FORGE_FUZZ_JINJA_ALL} ${FORGE_FUZZ_JINJA_HEADERS} ${CMAKE_SOURCE_DIR}/include/forge/chat_template.h
    COMMAND_EXPAND_LISTS
    COMMENT "Building libFuzzer target fuzz_chat_template with ${FORGE_FUZZ_CXX}")
  add_custom_target(fuzz_chat_template ALL DEPENDS ${FORGE_FUZZ_JINJA_BIN})

  set(FORGE_FUZZ_JINJA_SCRATCH ${CMAKE_CURRENT_BINARY_DIR}/fuzz/corpus_chat_template_scratch)
  file(MAKE_DIRECTORY ${FORGE_FUZZ_JINJA_SCRATCH})
  add_test(NAME fuzz_chat_template
           COMMAND ${FORGE_FUZZ_JINJA_BIN} -runs=200000 -max_total_time=60 -timeout=10 -rss_limit_mb=2048
                   -max_len=8192 -dict=${CMAKE_CURRENT_SOURCE_DIR}/fuzz/chat_template.dict
                   ${FORGE_FUZZ_JINJA_SCRATCH} ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus_chat_template)
  set_tests_properties(fuzz_chat_template PROPERTIES TIMEOUT 180 LABELS fuzz)
endif()
