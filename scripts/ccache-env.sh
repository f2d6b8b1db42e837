# Sourced by the build scripts: compile through ccache when it is installed.
# CMake reads CMAKE_CXX_COMPILER_LAUNCHER when it configures a build folder for
# the first time. Paths are hashed relative to the checkout, so build/ and
# build-cpu/ share entries (ccache's preprocessor mode leaves -D flags out of
# the hash; only files whose text depends on them differ).
if command -v ccache >/dev/null 2>&1; then
  export CMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER:-ccache}
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
fi
