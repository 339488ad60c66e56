# Configures the downstream project CONSUMER_DIR against the installed attograd in PREFIX, in
# WORK_DIR (emptied first), with the packages named in HIDE (comma-separated) made impossible to
# find: CMAKE_DISABLE_FIND_PACKAGE_<name>, under which find_package(<name> REQUIRED) is an error
# and any other look for it fails, as on a machine without their development files. Then either
#   EXPECT_ERROR given: configuring must fail, with output matching that regular expression
#                       (in which a space stands for any run of spaces and line breaks);
#   else: builds the project, runs its program `consumer` and compares what it prints with
#         CONSUMER_DIR/EXPECTED (expected.txt when not given).
# Any other outcome fails the test with the step's output.
get_filename_component(name ${CONSUMER_DIR} NAME)
set(name "consumer ${name}/")

string(REPLACE "," ";" hide "${HIDE}")
set(hidden "")
foreach(package IN LISTS hide)
  list(APPEND hidden -DCMAKE_DISABLE_FIND_PACKAGE_${package}=ON)
endforeach()

file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR} -G ${GENERATOR}
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${PREFIX} -DCMAKE_CXX_COMPILER=${CXX_COMPILER}
    -DCMAKE_CXX_COMPILER_LAUNCHER=${CXX_LAUNCHER} -DCMAKE_CXX_FLAGS=${CXX_FLAGS} ${hidden}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(DEFINED EXPECT_ERROR)
  # CMake wraps its messages to the terminal's width: matched with each run of spaces and line
  # breaks made one space.
  string(REGEX REPLACE "[ \n]+" " " text "${out}${err}")
  if(rc EQUAL 0 OR NOT text MATCHES "${EXPECT_ERROR}")
    message(FATAL_ERROR "${name}: expected configuring (hidden: ${HIDE}) to fail with "
                        "'${EXPECT_ERROR}', got (${rc}):\n${out}\n${err}")
  endif()
  return()
endif()
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${name}: configuring (hidden: ${HIDE}) failed (${rc}):\n${out}\n${err}")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${name}: building failed (${rc}):\n${out}\n${err}")
endif()
execute_process(COMMAND ${WORK_DIR}/consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT DEFINED EXPECTED OR EXPECTED STREQUAL "")
  set(EXPECTED expected.txt)
endif()
file(READ ${CONSUMER_DIR}/${EXPECTED} expected)
if(NOT rc EQUAL 0 OR NOT out STREQUAL expected)
  message(FATAL_ERROR "${name}: expected\n${expected}got (${rc})\n${out}${err}")
endif()
