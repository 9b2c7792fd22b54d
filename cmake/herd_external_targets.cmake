# Imported targets for dependencies that ship no usable CMake config: CAF::core and CAF::io
# (libcaf-dev 0.17 has no config, FindCAF.cmake or .pc file; see shared/stack.md section 1),
# herd_openblas (libopenblas-dev's config only sets variables) and PkgConfig::HERD_HTTPLIB
# (libcpp-httplib-dev ships only a .pc file). Used by Herd's own build and by herdConfig.cmake, so
# a project that calls find_package(herd) gets the same targets.

find_package(Threads REQUIRED)

find_path(CAF_INCLUDE_DIR caf/all.hpp)
find_library(CAF_CORE_LIBRARY caf_core)
find_library(CAF_IO_LIBRARY caf_io)
if(NOT CAF_INCLUDE_DIR OR NOT CAF_CORE_LIBRARY OR NOT CAF_IO_LIBRARY)
  message(FATAL_ERROR "CAF 0.17 not found: run scripts/install-deps.sh (apt-get install libcaf-dev)")
endif()
if(NOT TARGET CAF::core)
  add_library(CAF::core UNKNOWN IMPORTED)
  set_target_properties(CAF::core PROPERTIES
    IMPORTED_LOCATION ${CAF_CORE_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${CAF_INCLUDE_DIR}
    INTERFACE_LINK_LIBRARIES Threads::Threads)
endif()
if(NOT TARGET CAF::io)
  add_library(CAF::io UNKNOWN IMPORTED)
  set_target_properties(CAF::io PROPERTIES
    IMPORTED_LOCATION ${CAF_IO_LIBRARY}
    INTERFACE_LINK_LIBRARIES CAF::core)
endif()

# Control-plane TLS (libcaf-openssl0.17 comes with libcaf-dev); it links libssl and libcrypto.
find_library(CAF_OPENSSL_LIBRARY caf_openssl)
if(NOT CAF_OPENSSL_LIBRARY)
  message(FATAL_ERROR "CAF's OpenSSL module not found: run scripts/install-deps.sh (apt-get install libcaf-dev)")
endif()
if(NOT TARGET CAF::openssl)
  add_library(CAF::openssl UNKNOWN IMPORTED)
  set_target_properties(CAF::openssl PROPERTIES
    IMPORTED_LOCATION ${CAF_OPENSSL_LIBRARY}
    INTERFACE_LINK_LIBRARIES CAF::io)
endif()

# The pthread flavour's include dir, so that openblas_set_num_threads is declared.
find_package(OpenBLAS CONFIG QUIET)
if(NOT OpenBLAS_FOUND)
  message(FATAL_ERROR "OpenBLAS not found: run scripts/install-deps.sh (apt-get install libopenblas-dev)")
endif()
if(NOT TARGET herd_openblas)
  add_library(herd_openblas INTERFACE IMPORTED)
  set_target_properties(herd_openblas PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${OpenBLAS_INCLUDE_DIRS}"
    INTERFACE_LINK_LIBRARIES "${OpenBLAS_LIBRARIES}")
endif()

# cpp-httplib serves /metrics. Debian builds it as a shared library, and its .pc file carries the
# -DCPPHTTPLIB_{OPENSSL,ZLIB,BROTLI}_SUPPORT flags that must match the library's ABI.
# herd::monitoring links it privately, but a static herd_monitoring still lists it in its link
# interface ($<LINK_ONLY:...>), so a consumer of the installed package needs this target too.
if(NOT TARGET PkgConfig::HERD_HTTPLIB)
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(HERD_HTTPLIB QUIET IMPORTED_TARGET cpp-httplib)
  endif()
  if(NOT HERD_HTTPLIB_FOUND)
    message(FATAL_ERROR "cpp-httplib not found through pkg-config: run scripts/install-deps.sh "
                        "(apt-get install pkg-config libcpp-httplib-dev)")
  endif()
endif()
