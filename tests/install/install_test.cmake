# The steps of the install tests (tests/install/CMakeLists.txt), one per ctest entry so that one
# install serves every project built against it:
#   -DSTEP=install -DHERD_BUILD_DIR= -DPREFIX=          installs the build into a fresh PREFIX
#   -DSTEP=project -DPREFIX= -DSOURCE_DIR= -DWORK_DIR= -DEXECUTABLE= [-DARGUMENTS=a;b]
#       [-DEXPECT_OUTPUT=regex] [-DSANITIZER_FLAGS=]
#                     configures, builds and runs the project at SOURCE_DIR against PREFIX; the
#                     executable must exit 0 and, with EXPECT_OUTPUT, print a match
#   -DSTEP=remove -DPREFIX=                             removes PREFIX
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "failed (${status}): ${ARGN}\n${output}")
  endif()
  message(STATUS "${output}")
  set(run_output "${output}" PARENT_SCOPE)
endfunction()

if(STEP STREQUAL "install")
  file(REMOVE_RECURSE ${PREFIX})
  run(${CMAKE_COMMAND} --install ${HERD_BUILD_DIR} --prefix ${PREFIX})
elseif(STEP STREQUAL "project")
  if(NOT EXISTS ${PREFIX}/lib/cmake/herd/herdConfig.cmake
     AND NOT EXISTS ${PREFIX}/lib64/cmake/herd/herdConfig.cmake)
    message(FATAL_ERROR "no installed Herd under ${PREFIX}: the install step did not run or failed")
  endif()
  file(REMOVE_RECURSE ${WORK_DIR})
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR} -DCMAKE_PREFIX_PATH=${PREFIX}
      -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS=${SANITIZER_FLAGS}"
      "-DCMAKE_EXE_LINKER_FLAGS=${SANITIZER_FLAGS}")
  run(${CMAKE_COMMAND} --build ${WORK_DIR})
  run(${WORK_DIR}/${EXECUTABLE} ${ARGUMENTS})
  if(DEFINED EXPECT_OUTPUT AND NOT run_output MATCHES "${EXPECT_OUTPUT}")
    message(FATAL_ERROR "${EXECUTABLE} exited 0 but its output does not match "
                        "'${EXPECT_OUTPUT}':\n${run_output}")
  endif()
  file(REMOVE_RECURSE ${WORK_DIR})
elseif(STEP STREQUAL "remove")
  file(REMOVE_RECURSE ${PREFIX})
else()
  message(FATAL_ERROR "install_test.cmake: unknown STEP '${STEP}'")
endif()
