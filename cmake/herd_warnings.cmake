# Warnings for Herd's own targets (never for third-party headers, which come in as SYSTEM includes),
# and the sanitizer builds that scripts/sanitize.sh runs.

function(herd_set_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wold-style-cast
                              -Wcast-align -Woverloaded-virtual -Wnull-dereference -Wformat=2>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra>)
  if(HERD_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()

if(HERD_SANITIZERS STREQUAL "address")
  # UBSan's null check fires inside CAF's init_fun_factory.hpp whenever a lambda is spawned
  # ("reference binding to null pointer", CAF 0.17.6): noise from CAF, so it is switched off.
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize=null>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=address,undefined)
elseif(HERD_SANITIZERS STREQUAL "thread")
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=thread>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=thread)
elseif(HERD_SANITIZERS AND NOT HERD_SANITIZERS STREQUAL "OFF")
  message(FATAL_ERROR "HERD_SANITIZERS must be OFF, address or thread (got '${HERD_SANITIZERS}')")
endif()

# One static library per top-level folder, exported as herd::<folder>; libherd.so is all of them
# (herd_install.cmake). The public headers (include/herd/) are the only ones a consumer sees; the
# folders' own headers ("actors/worker.hpp") are for Herd's code and tests, never installed.
function(herd_add_library name)
  cmake_parse_arguments(arg "" "" "SOURCES;PUBLIC_LIBS;PRIVATE_LIBS" ${ARGN})
  add_library(herd_${name} STATIC ${arg_SOURCES})
  add_library(herd::${name} ALIAS herd_${name})
  set_target_properties(herd_${name} PROPERTIES EXPORT_NAME ${name} OUTPUT_NAME herd_${name}
    POSITION_INDEPENDENT_CODE ON)
  target_include_directories(herd_${name} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${HERD_SOURCE_INCLUDE_DIR}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(herd_${name} PUBLIC ${arg_PUBLIC_LIBS} PRIVATE ${arg_PRIVATE_LIBS})
  herd_set_warnings(herd_${name})
  set_property(GLOBAL APPEND PROPERTY HERD_LIBRARIES herd_${name})
endfunction()
