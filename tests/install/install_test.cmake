# Installs the build into a scratch prefix, then configures, builds and runs tests/install/consumer
# against it. Arguments: -DHERD_BUILD_DIR= -DWORK_DIR= -DSOURCE_DIR= [-DSANITIZER_FLAGS=]
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE output)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "failed (${status}): ${ARGN}\n${output}")
  endif()
  message(STATUS "${output}")
endfunction()
run(${CMAKE_COMMAND} --install ${HERD_BUILD_DIR} --prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
    -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CXX_FLAGS=${SANITIZER_FLAGS}"
    "-DCMAKE_EXE_LINKER_FLAGS=${SANITIZER_FLAGS}")
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/consumer)
file(REMOVE_RECURSE ${WORK_DIR})
