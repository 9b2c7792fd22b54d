# `cmake --install` puts Herd's libraries, headers and a CMake package under the prefix, so another
# project can find_package(herd) and link herd::actors (tests/install checks exactly that).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

get_property(herd_libraries GLOBAL PROPERTY HERD_LIBRARIES)
install(TARGETS ${herd_libraries}
  EXPORT herd_targets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(EXPORT herd_targets
  NAMESPACE herd::
  FILE herdTargets.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/herd)

foreach(folder kernels models comm checkpoint policy actors cluster config monitoring)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${folder}/
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/herd/${folder}
    FILES_MATCHING PATTERN "*.hpp")
endforeach()

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/herdConfig.cmake.in
  ${PROJECT_BINARY_DIR}/herdConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/herd)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/herdConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/herdConfig.cmake
  ${PROJECT_BINARY_DIR}/herdConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/herd_external_targets.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/herd)
