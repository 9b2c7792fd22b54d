# Imported targets for dependencies that ship no usable CMake config: CAF::core and CAF::io
# (libcaf-dev 0.17 has no CMake config, FindCAF.cmake or .pc file) and herd_openblas
# (libopenblas-dev's config only sets variables). Used by Herd's own build and by
# herdConfig.cmake, so a project that calls find_package(herd) gets the same targets.
#
# CAF::core is needed by everything (herd::herd's interface names it, for herd/job_actor.hpp).
# CAF::io, OpenSSL and OpenBLAS only by the static libraries: when HERD_STATIC_DEPENDENCIES_OPTIONAL
# is set (herdConfig.cmake sets it), a missing one is added to HERD_MISSING_STATIC_DEPENDENCIES
# instead of stopping, so that a service linking only libherd.so needs none of their development
# packages. Herd's own build needs all of them.

find_package(Threads REQUIRED)

macro(herd_missing_dependency what how)
  if(HERD_STATIC_DEPENDENCIES_OPTIONAL)
    list(APPEND HERD_MISSING_STATIC_DEPENDENCIES "${what}")
  else()
    message(FATAL_ERROR "${what} not found: run scripts/install-deps.sh (${how})")
  endif()
endmacro()

find_path(CAF_INCLUDE_DIR caf/all.hpp)
find_library(CAF_CORE_LIBRARY caf_core)
find_library(CAF_IO_LIBRARY caf_io)
if(NOT CAF_INCLUDE_DIR OR NOT CAF_CORE_LIBRARY)
  message(FATAL_ERROR "CAF 0.17 not found: run scripts/install-deps.sh (apt-get install libcaf-dev)")
endif()
# Herd is built against CAF 0.17 (Debian 12's libcaf-dev): its actor API (herd/job_actor.hpp) does
# not compile against another version, and libherd carries CAF 0.17's symbols, which a second CAF
# in the same process would clash with.
file(STRINGS "${CAF_INCLUDE_DIR}/caf/config.hpp" herd_caf_version_line
     REGEX "^#define CAF_VERSION [0-9]+")
string(REGEX REPLACE "^#define CAF_VERSION ([0-9]+).*" "\\1" herd_caf_version "${herd_caf_version_line}")
if(NOT herd_caf_version MATCHES "^17[0-9][0-9]$")
  message(FATAL_ERROR "CAF at ${CAF_INCLUDE_DIR} is version ${herd_caf_version} (CAF_VERSION in "
                      "caf/config.hpp); Herd needs CAF 0.17 (1700-1799, Debian 12's libcaf-dev)")
endif()
if(NOT TARGET CAF::core)
  add_library(CAF::core UNKNOWN IMPORTED)
  set_target_properties(CAF::core PROPERTIES
    IMPORTED_LOCATION ${CAF_CORE_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${CAF_INCLUDE_DIR}
    INTERFACE_LINK_LIBRARIES Threads::Threads)
endif()
if(NOT CAF_IO_LIBRARY)
  herd_missing_dependency("CAF's io library (caf_io)" "apt-get install libcaf-dev")
elseif(NOT TARGET CAF::io)
  add_library(CAF::io UNKNOWN IMPORTED)
  set_target_properties(CAF::io PROPERTIES
    IMPORTED_LOCATION ${CAF_IO_LIBRARY}
    INTERFACE_LINK_LIBRARIES CAF::core)
endif()

# Control-plane TLS: the gate runs it with OpenSSL itself (libssl-dev); CAF only ever sees the
# plain bytes of connections the gate admitted.
find_package(OpenSSL QUIET)
if(NOT OpenSSL_FOUND)
  herd_missing_dependency("OpenSSL" "apt-get install libssl-dev")
endif()

# The pthread flavour's include dir, so that openblas_set_num_threads is declared.
find_package(OpenBLAS CONFIG QUIET)
if(NOT OpenBLAS_FOUND)
  herd_missing_dependency("OpenBLAS" "apt-get install libopenblas-dev")
elseif(NOT TARGET herd_openblas)
  add_library(herd_openblas INTERFACE IMPORTED)
  set_target_properties(herd_openblas PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${OpenBLAS_INCLUDE_DIRS}"
    INTERFACE_LINK_LIBRARIES "${OpenBLAS_LIBRARIES}")
endif()
