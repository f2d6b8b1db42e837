# Sourced by the build scripts: compile through ccache when it is installed.
# CMake reads CMAKE_CXX_COMPILER_LAUNCHER when it configures a build folder for
# the first time. Paths are hashed relative to the checkout, so build/ and
# build-cpu/ share entries (ccache's preprocessor mode leaves -D flags out of
# the hash; only files whose text depends on them differ).
if command -v ccache >/dev/null 2>&1; then
  export CMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
  # The sanitizer build compiles with -g1, and ccache then hashes the working
  # directory (the debug info names it): every fresh clone missed the cache
  # for all of that build. Objects from another clone differ only in the
  # folder their debug info names.
  export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
fi
