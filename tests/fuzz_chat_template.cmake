# libFuzzer target for the Jinja chat-template interpreter (see fuzz.cmake):
# only the interpreter's sources and the UTF-8 helpers; the seed corpus holds
# released models' templates. More inputs than the file parsers: each is cheap.
if(FORGE_FUZZ AND FORGE_FUZZ_CXX)
  file(GLOB FORGE_FUZZ_JINJA_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/src/text/jinja/*.cpp)
  forge_fuzz_target(fuzz_chat_template ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/corpus_chat_template
                    ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/chat_template.dict -runs=200000 -max_total_time=60 -max_len=8192
                    ${CMAKE_CURRENT_SOURCE_DIR}/fuzz/fuzz_chat_template.cpp ${FORGE_FUZZ_JINJA_SOURCES}
                    ${CMAKE_SOURCE_DIR}/src/text/utf8.cpp)
endif()
