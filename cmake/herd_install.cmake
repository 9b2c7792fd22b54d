# `cmake --install` puts Herd's libraries, its public headers, a CMake package and the shipped
# configs and monitoring files under the prefix (docs/install.md):
#   lib/libherd.so                 herd::herd, the whole library (the folders' libraries in one)
#   lib/libherd_<folder>.a         herd::<folder>, and herd::herd_static, all of them
#   include/herd/*.hpp             the public API, and nothing else
#   lib/cmake/herd/                herdConfig.cmake and its version file
#   lib/pkgconfig/herd.pc          pkg-config: libherd.so and include/
#   share/herd/                    config/ (*.ini, simulate/*.ini), grafana/, prometheus/
# tests/install checks each part.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

get_property(herd_libraries GLOBAL PROPERTY HERD_LIBRARIES)

# libherd.so: every folder's static library whole (their objects, built with -fPIC), so that a
# consumer links one library whose only public dependencies are the standard library and CAF's
# core (herd/job_actor.hpp; the other public headers include nothing else). The folders' dependencies (CAF, OpenBLAS, zlib, Gloo, OpenSSL,
# CUDA) come through linking the folder libraries privately: their objects are all in already, so
# the archives add nothing but those dependencies. (Not $<LINK_LIBRARY:WHOLE_ARCHIVE,...>: the
# folder libraries reach the link again through each other's link interfaces, and each repetition
# is then a second whole copy, every symbol defined twice.)
set(herd_shared_objects "")
foreach(library IN LISTS herd_libraries)
  list(APPEND herd_shared_objects $<TARGET_OBJECTS:${library}>)
endforeach()
add_library(herd_shared SHARED ${herd_shared_objects})
add_library(herd::herd ALIAS herd_shared)
set_target_properties(herd_shared PROPERTIES
  OUTPUT_NAME herd EXPORT_NAME herd
  VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}.${PROJECT_VERSION_MINOR}
  # Which linker language: CXX; the CUDA objects are host-linked like any other.
  LINKER_LANGUAGE CXX
  # The folders of shared libraries it needs outside the system's (a CUDA build's libcublas and
  # libnccl), as its run path: found when a consumer links and runs without setting paths.
  INSTALL_RPATH_USE_LINK_PATH ON)
target_include_directories(herd_shared PUBLIC
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
target_compile_features(herd_shared PUBLIC cxx_std_17)
target_link_libraries(herd_shared PRIVATE ${herd_libraries})
# herd/job_actor.hpp (jobs in the caller's actor system) is CAF's API: its users compile against
# CAF and link libcaf_core, the same shared library libherd.so uses.
target_link_libraries(herd_shared PUBLIC CAF::core)
# An undefined symbol is an error when libherd.so is linked, not when a consumer is.
target_link_options(herd_shared PRIVATE LINKER:--no-undefined)

# herd::herd_static: the folders' static libraries together, with their dependencies (which the
# consumer then needs to find: herdConfig.cmake does).
add_library(herd_static INTERFACE)
add_library(herd::herd_static ALIAS herd_static)
set_target_properties(herd_static PROPERTIES EXPORT_NAME herd_static)
target_link_libraries(herd_static INTERFACE ${herd_libraries})

install(TARGETS ${herd_libraries} herd_shared herd_static
  EXPORT herd_targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT herd_targets
  NAMESPACE herd::
  FILE herdTargets.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/herd)

# include/herd/ is the public API by definition: all of it, and no internal header.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/herd DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# The files a deployment uses next to the library: the shipped run configurations, the Grafana
# dashboard, and Prometheus' scrape config with its alert rules (prometheus.yml names
# herd-alerts.yml relative to itself, so they stay in one folder).
# config/ also holds the loader's sources: only the .ini files, and simulate/'s, keeping the
# folders (FILES_MATCHING would also create an empty folder for any other subfolder).
file(GLOB herd_shipped_configs ${PROJECT_SOURCE_DIR}/config/*.ini)
file(GLOB herd_shipped_simulations ${PROJECT_SOURCE_DIR}/config/simulate/*.ini)
install(FILES ${herd_shipped_configs} DESTINATION ${CMAKE_INSTALL_DATADIR}/herd/config)
install(FILES ${herd_shipped_simulations} DESTINATION ${CMAKE_INSTALL_DATADIR}/herd/config/simulate)
install(FILES ${PROJECT_SOURCE_DIR}/monitoring/grafana/herd-imbalance.json
  DESTINATION ${CMAKE_INSTALL_DATADIR}/herd/grafana)
install(FILES ${PROJECT_SOURCE_DIR}/monitoring/prometheus/prometheus.yml
  ${PROJECT_SOURCE_DIR}/monitoring/prometheus/herd-alerts.yml
  DESTINATION ${CMAKE_INSTALL_DATADIR}/herd/prometheus)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/herdConfig.cmake.in
  ${PROJECT_BINARY_DIR}/herdConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/herd)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/herdConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/herdConfig.cmake
  ${PROJECT_BINARY_DIR}/herdConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/herd_external_targets.cmake
  ${PROJECT_SOURCE_DIR}/cmake/herd_cuda_targets.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/herd)

# pkg-config (libherd.so only: the static libraries' dependencies are CMake's business).
configure_file(${PROJECT_SOURCE_DIR}/cmake/herd.pc.in ${PROJECT_BINARY_DIR}/herd.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/herd.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
