# Installs wick into a scratch prefix, then builds tests/consumer/project against it twice:
# with CMake's find_package(wick), and with the compiler alone and `pkg-config --cflags
# --libs wick` (--static for a static libwick). Each program runs (a shared libwick: both load
# it by its versioned SONAME); where QEMU is given
# (qemu-x86_64) the first also runs on an emulated CPU with AVX2 but no AVX-512 and on one
# with no AVX at all, and must choose the matching matrix-product kernels.
file(REMOVE_RECURSE ${WORK_DIR})
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${WICK_BUILD_DIR} --prefix ${WORK_DIR}/prefix)
# Internal headers stay out of the install (the consumer's <wick/wick.h> must compile without).
file(STRINGS ${INTERNAL_HEADERS} internal_headers REGEX "^[^#]")
foreach(header IN LISTS internal_headers)
  if(EXISTS ${WORK_DIR}/prefix/include/${header})
    message(FATAL_ERROR "the internal header ${header} was installed")
  endif()
endforeach()
if(NOT EXISTS ${WORK_DIR}/prefix/include/wick/tensor/tensor.h)
  message(FATAL_ERROR "no public headers under ${WORK_DIR}/prefix/include/wick")
endif()
string(REPLACE "|" ";" hints "${HINTS}")
# A sanitized libwick (CI's sanitizer build) needs its runtime in the program that links it.
set(sanitize_flags "")
if(SANITIZE)
  set(sanitize_flags -fsanitize=${SANITIZE})
  list(APPEND hints "-DCMAKE_CXX_FLAGS=-fsanitize=${SANITIZE}" "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=${SANITIZE}")
endif()
# The core-only program with Gloo, libpng and libjpeg unfindable: find_package(wick) must not
# look for them (they come with the images and distributed components).
run(${CMAKE_COMMAND} -S ${PROJECT_DIR} -B ${WORK_DIR}/build -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix
    -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release ${hints}
    -DCMAKE_DISABLE_FIND_PACKAGE_Gloo=ON -DCMAKE_DISABLE_FIND_PACKAGE_PNG=ON -DCMAKE_DISABLE_FIND_PACKAGE_JPEG=ON)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/consumer)
# Then the program that names the components.
if(HAS_DISTRIBUTED)
  run(${CMAKE_COMMAND} -S ${PROJECT_DIR} -B ${WORK_DIR}/build_components -G ${GENERATOR}
      -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release ${hints}
      -DWITH_COMPONENTS=ON)
  run(${CMAKE_COMMAND} --build ${WORK_DIR}/build_components)
  run(${WORK_DIR}/build_components/consumer_components)
endif()
if(QEMU)
  run(${QEMU} -cpu max ${WORK_DIR}/build/consumer avx2)
  run(${QEMU} -cpu qemu64 ${WORK_DIR}/build/consumer baseline)
endif()

# pkg-config: the .pc file finds its prefix from its own place.
file(GLOB pc_file ${WORK_DIR}/prefix/lib*/pkgconfig/wick.pc ${WORK_DIR}/prefix/lib/*/pkgconfig/wick.pc)
if(NOT pc_file)
  message(FATAL_ERROR "no wick.pc under ${WORK_DIR}/prefix")
endif()
get_filename_component(pc_dir ${pc_file} DIRECTORY)
file(GLOB shared_lib ${pc_dir}/../libwick.so)
set(static "")
if(NOT shared_lib)
  set(static --static)
endif()
function(pkg_config out)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pc_dir} pkg-config ${static} --cflags --libs ${ARGN}
                  OUTPUT_VARIABLE flags OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "pkg-config ${static} --cflags --libs ${ARGN} failed (${rc})")
  endif()
  message(STATUS "pkg-config ${static} --cflags --libs ${ARGN}: ${flags}")
  separate_arguments(flags UNIX_COMMAND "${flags}")
  set(${out} ${flags} PARENT_SCOPE)
endfunction()
pkg_config(pc_flags wick)
file(READ ${pc_file} pc_text)
if(pc_text MATCHES "-std=" OR pc_text MATCHES "Cflags:[^\n]*-fopenmp" OR pc_text MATCHES "Libs[^\n]* /[^ \n]*\\.(so|a)")
  message(FATAL_ERROR "wick.pc forces -std or -fopenmp on compiles, or names a library file by path:\n${pc_text}")
endif()
file(READ ${WORK_DIR}/prefix/include/wick/version.h version_h)
# The installed header says what this build has (the in-tree one holds the defaults).
if(NOT version_h MATCHES "#define WICK_HAS_DISTRIBUTED ${HAS_DISTRIBUTED}\n")
  message(FATAL_ERROR "the installed wick/version.h does not say WICK_HAS_DISTRIBUTED ${HAS_DISTRIBUTED}")
endif()
string(REGEX MATCH "WICK_VERSION_STRING \"([^\"]*)\"" _ "${version_h}")
# With strict warnings: the public headers (all of <wick/wick.h>) must not warn a user who
# builds with them (the CMake consumer sees them as system headers, which never warn).
run(${CXX} -std=c++20 -O1 -Wall -Wextra -Wpedantic -Werror ${sanitize_flags} ${PROJECT_DIR}/main.cpp
    -DEXPECTED_WICK_VERSION="${CMAKE_MATCH_1}" ${pc_flags} -Wl,-rpath,${pc_dir}/.. -o ${WORK_DIR}/consumer_pkg_config)
run(${WORK_DIR}/consumer_pkg_config)
if(HAS_DISTRIBUTED)
  pkg_config(pc_component_flags wick)
  run(${CXX} -std=c++20 -O1 ${sanitize_flags} ${PROJECT_DIR}/components.cpp ${pc_component_flags}
      -Wl,-rpath,${pc_dir}/.. -o ${WORK_DIR}/consumer_components_pkg_config)
  run(${WORK_DIR}/consumer_components_pkg_config)
endif()

# A shared libwick: its SONAME is versioned, and both programs load it rather than holding a
# copy (`readelf -d`: the library's SONAME, each program's NEEDED entries).
if(shared_lib)
  find_program(READELF readelf REQUIRED)
  execute_process(COMMAND ${READELF} -d ${shared_lib} OUTPUT_VARIABLE dynamic RESULT_VARIABLE rc)
  string(REGEX MATCH "Library soname: \\[(libwick\\.so\\.[0-9]+\\.[0-9]+)\\]" _ "${dynamic}")
  if(NOT rc EQUAL 0 OR NOT CMAKE_MATCH_1)
    message(FATAL_ERROR "${shared_lib} has no versioned SONAME:\n${dynamic}")
  endif()
  set(soname ${CMAKE_MATCH_1})
  foreach(program ${WORK_DIR}/build/consumer ${WORK_DIR}/consumer_pkg_config)
    execute_process(COMMAND ${READELF} -d ${program} OUTPUT_VARIABLE dynamic)
    if(NOT dynamic MATCHES "NEEDED\\)[^\n]*\\[${soname}\\]")
      message(FATAL_ERROR "${program} does not load ${soname}:\n${dynamic}")
    endif()
  endforeach()
  message(STATUS "shared libwick: SONAME ${soname}, loaded by both consumers")
endif()
