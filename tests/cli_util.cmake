# The conventions every forge command shares (tools/forge/cli_util.cpp: id
# lists, range messages, path checks) are also tested in-process.
target_sources(forge_tests PRIVATE ${CMAKE_SOURCE_DIR}/tools/forge/cli_util.cpp)
target_include_directories(forge_tests PRIVATE ${CMAKE_SOURCE_DIR}/tools/forge)
target_link_libraries(forge_tests PRIVATE CLI11::CLI11)
