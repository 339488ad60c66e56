# Fails when a source file of the project includes a header through "..": such a path is looked
# up beside the including file and so bypasses the layers' include roots (tests/layering's
# CMakeLists.txt). Run as: cmake -DSOURCE_DIR=<the project's root> -P no_relative_includes.cmake
cmake_policy(SET CMP0009 NEW)  # GLOB_RECURSE follows no symlink
if(NOT SOURCE_DIR)
  message(FATAL_ERROR "no_relative_includes.cmake: give -DSOURCE_DIR=<the project's root>")
endif()
file(GLOB_RECURSE sources LIST_DIRECTORIES false RELATIVE ${SOURCE_DIR}
  ${SOURCE_DIR}/*.h ${SOURCE_DIR}/*.cc ${SOURCE_DIR}/*.cpp)
set(found "")
set(scanned 0)
foreach(source IN LISTS sources)
  # Build trees (build/, build-asan/, ...) and hidden folders hold generated or foreign files.
  if(source MATCHES "^(build[^/]*|\\.[^/]*)/")
    continue()
  endif()
  math(EXPR scanned "${scanned} + 1")
  file(STRINGS ${SOURCE_DIR}/${source} lines REGEX "^[ \t]*#[ \t]*include[ \t]*[\"<][^\">]*\\.\\.[/\\\\]")
  foreach(line IN LISTS lines)
    string(STRIP "${line}" line)
    string(APPEND found "\n  ${source}: ${line}")
  endforeach()
endforeach()
if(scanned LESS 100)
  message(FATAL_ERROR "no_relative_includes.cmake: only ${scanned} sources under ${SOURCE_DIR}; "
                      "is SOURCE_DIR the project's root?")
endif()
if(found)
  message(FATAL_ERROR "includes that climb out of their folder with \"..\" (they bypass the "
                      "layers' include roots; include by the path from a root, as "
                      "\"gpt/train/trainer.h\", and link the layer that owns it):${found}")
endif()
message(STATUS "${scanned} sources, none including through \"..\"")
