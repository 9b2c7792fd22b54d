# The steps of the install tests (tests/install/CMakeLists.txt), one per ctest entry so that one
# install serves every project built against it:
#   -DSTEP=install -DHERD_BUILD_DIR= -DPREFIX=          installs the build into a fresh PREFIX
#   -DSTEP=layout -DPREFIX=                             checks what the prefix holds: include/
#                     only herd/ with public headers and no folder, the shared and static
#                     libraries, share/herd/'s configs and monitoring files, no empty folder, and
#                     no absolute /usr/local path in the CMake package
#   -DSTEP=project -DPREFIX= -DSOURCE_DIR= -DWORK_DIR= -DEXECUTABLE= [-DARGUMENTS=a;b]
#       [-DCONFIGURE_ARGS=-Da=b;-Dc=d] [-DEXPECT_OUTPUT=regex] [-DSANITIZER_FLAGS=]
#                     configures, builds and runs the project at SOURCE_DIR against PREFIX; the
#                     executable must exit 0 and, with EXPECT_OUTPUT, print a match
#   -DSTEP=pkgconfig -DPREFIX= -DSOURCE= -DWORK_DIR=     compiles SOURCE with the flags
#                     `pkg-config --cflags --libs herd` gives for PREFIX, and runs it
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
elseif(STEP STREQUAL "layout")
  set(problems "")
  file(GLOB include_entries RELATIVE ${PREFIX}/include ${PREFIX}/include/*)
  if(NOT include_entries STREQUAL "herd")
    list(APPEND problems "include/ holds '${include_entries}', not only herd/")
  endif()
  file(GLOB public_entries RELATIVE ${PREFIX}/include/herd ${PREFIX}/include/herd/*)
  foreach(entry IN LISTS public_entries)
    if(IS_DIRECTORY ${PREFIX}/include/herd/${entry} OR NOT entry MATCHES "\\.hpp$")
      list(APPEND problems "include/herd/${entry} is not a public header (include/herd/ is flat)")
    endif()
  endforeach()
  foreach(header config.hpp run_config.hpp model.hpp sequential.hpp layers.hpp dataset.hpp
                 dataset_sources.hpp idx.hpp tensor.hpp ops.hpp memory.hpp run_summary.hpp
                 metrics.hpp)
    if(NOT EXISTS ${PREFIX}/include/herd/${header})
      list(APPEND problems "include/herd/${header} is missing")
    endif()
  endforeach()
  file(GLOB libdirs ${PREFIX}/lib ${PREFIX}/lib64)
  list(GET libdirs 0 libdir)
  foreach(library libherd.so libherd_actors.a libherd_models.a libherd_kernels.a)
    if(NOT EXISTS ${libdir}/${library})
      list(APPEND problems "${libdir}/${library} is missing")
    endif()
  endforeach()
  foreach(shared config/quickstart.ini config/cnn.ini config/text.ini config/bench.ini
                 config/simulate/wagma-weak-scaling.ini
                 grafana/herd-imbalance.json prometheus/prometheus.yml prometheus/herd-alerts.yml)
    if(NOT EXISTS ${PREFIX}/share/herd/${shared})
      list(APPEND problems "share/herd/${shared} is missing")
    endif()
  endforeach()
  file(GLOB_RECURSE folders LIST_DIRECTORIES true ${PREFIX}/*)
  foreach(folder IN LISTS folders)
    if(IS_DIRECTORY ${folder})
      file(GLOB inside ${folder}/*)
      if(NOT inside)
        list(APPEND problems "${folder} is an empty folder")
      endif()
    endif()
  endforeach()
  file(GLOB_RECURSE package_files ${libdir}/cmake/*)
  foreach(package_file IN LISTS package_files)
    file(STRINGS ${package_file} absolute REGEX "/usr/local")
    if(absolute)
      list(APPEND problems "${package_file} names /usr/local: ${absolute}")
    endif()
  endforeach()
  if(problems)
    list(JOIN problems "\n  " text)
    message(FATAL_ERROR "the installed prefix ${PREFIX} is not as it should be:\n  ${text}")
  endif()
  message(STATUS "${PREFIX}: include/herd/ holds ${public_entries}")
elseif(STEP STREQUAL "project")
  if(NOT EXISTS ${PREFIX}/lib/cmake/herd/herdConfig.cmake
     AND NOT EXISTS ${PREFIX}/lib64/cmake/herd/herdConfig.cmake)
    message(FATAL_ERROR "no installed Herd under ${PREFIX}: the install step did not run or failed")
  endif()
  file(REMOVE_RECURSE ${WORK_DIR})
  run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR} -DCMAKE_PREFIX_PATH=${PREFIX}
      -DCMAKE_BUILD_TYPE=Release ${CONFIGURE_ARGS} "-DCMAKE_CXX_FLAGS=${SANITIZER_FLAGS}"
      "-DCMAKE_EXE_LINKER_FLAGS=${SANITIZER_FLAGS}")
  run(${CMAKE_COMMAND} --build ${WORK_DIR})
  run(${WORK_DIR}/${EXECUTABLE} ${ARGUMENTS})
  if(DEFINED EXPECT_OUTPUT AND NOT run_output MATCHES "${EXPECT_OUTPUT}")
    message(FATAL_ERROR "${EXECUTABLE} exited 0 but its output does not match "
                        "'${EXPECT_OUTPUT}':\n${run_output}")
  endif()
  file(REMOVE_RECURSE ${WORK_DIR})
elseif(STEP STREQUAL "pkgconfig")
  file(GLOB pc_files ${PREFIX}/lib/pkgconfig/herd.pc ${PREFIX}/lib64/pkgconfig/herd.pc)
  if(NOT pc_files)
    message(FATAL_ERROR "no lib/pkgconfig/herd.pc under ${PREFIX}")
  endif()
  list(GET pc_files 0 pc_file)
  get_filename_component(pc_dir ${pc_file} DIRECTORY)
  set(ENV{PKG_CONFIG_PATH} ${pc_dir})
  run(pkg-config --cflags --libs herd)
  separate_arguments(flags UNIX_COMMAND "${run_output}")
  get_filename_component(libdir ${pc_dir} DIRECTORY)
  file(REMOVE_RECURSE ${WORK_DIR})
  file(MAKE_DIRECTORY ${WORK_DIR})
  run(c++ -O2 ${SOURCE} -o ${WORK_DIR}/program ${flags} -Wl,-rpath,${libdir})
  run(${WORK_DIR}/program)
  file(REMOVE_RECURSE ${WORK_DIR})
elseif(STEP STREQUAL "remove")
  file(REMOVE_RECURSE ${PREFIX})
else()
  message(FATAL_ERROR "install_test.cmake: unknown STEP '${STEP}'")
endif()
