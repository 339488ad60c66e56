# The installed package attograd, in components (issue 32, item 5):
#   find_package(attograd REQUIRED COMPONENTS core nn)
# loads the targets of the components asked for and of those they stand on, and finds only the
# libraries those targets link; no COMPONENTS means all of them. Included by the top-level
# CMakeLists.txt, which declares the components at its end, once every library is defined.
#
# Why components: the libraries are static, so an installed target carries its PRIVATE link
# dependencies too ($<LINK_ONLY:CURL::libcurl> in its INTERFACE_LINK_LIBRARIES). With one export
# set, the one targets file named libcurl, MPI and PCRE2, and every consumer had to find them to
# link the engine alone. So each component is its own export set, installed as its own targets
# file (attograd-<component>-targets.cmake), which attogradConfig.cmake includes only when the
# component is wanted, after finding what it links.
#
# What a component needs is read from its targets' link lists, never written by hand, so it
# cannot drift from them: an attograd target of an earlier component makes that component
# required (with what it requires), an imported target (hwy::hwy, CURL::libcurl) is a dependency,
# found at load time by cmake/attograd-dependencies.cmake, which must know how (checked here).
# Anything else (a target of a later component or of none, a plain library name, a generator
# expression) stops the configure: the package could not reproduce it.
include(CMakePackageConfigHelpers)
include(${CMAKE_CURRENT_LIST_DIR}/attograd-dependencies.cmake)
set(ATTOGRAD_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/attograd)

# attograd_package_component(<component> <target>...): installs the targets (their libraries;
# headers are installed with their include roots) in the component's export set and its targets
# file, and records for attogradConfig.cmake what the component requires and links.
function(attograd_package_component component)
  get_property(components GLOBAL PROPERTY ATTOGRAD_PACKAGE_COMPONENTS)
  if(component IN_LIST components)
    message(FATAL_ERROR "attograd_package_component: ${component} is declared twice")
  endif()
  foreach(target IN LISTS ARGN)
    set_property(GLOBAL PROPERTY ATTOGRAD_PACKAGE_COMPONENT_OF_${target} ${component})
  endforeach()
  set(requires "")
  set(dependencies "")
  set(ATTOGRAD_CHECKING_DEPENDENCIES ON)  # attograd_find_dependency only checks that it knows one
  foreach(target IN LISTS ARGN)
    # What the export writes: a static library's PRIVATE links are there as $<LINK_ONLY:...>.
    get_target_property(links ${target} INTERFACE_LINK_LIBRARIES)
    # No links at all, and target_link_libraries' markers for a call from another directory.
    list(FILTER links EXCLUDE REGEX "-NOTFOUND$|^::@")
    list(TRANSFORM links REPLACE "^\\$<LINK_ONLY:(.*)>$" "\\1")
    foreach(link IN LISTS links)
      if(TARGET ${link})
        get_target_property(aliased ${link} ALIASED_TARGET)
        if(aliased)
          set(link ${aliased})
        endif()
      endif()
      get_property(of GLOBAL PROPERTY ATTOGRAD_PACKAGE_COMPONENT_OF_${link})
      if(of)
        if(NOT of STREQUAL component)
          get_property(below GLOBAL PROPERTY ATTOGRAD_PACKAGE_REQUIRES_${of})
          list(APPEND requires ${below} ${of})
        endif()
      elseif(TARGET ${link} AND NOT link MATCHES "::")
        message(FATAL_ERROR "${target} (package component ${component}) links ${link}, which no "
                            "package component installs: name it in this component's "
                            "attograd_package_component call (CMakeLists.txt) or in one before it")
      elseif(link MATCHES "^[A-Za-z0-9_.+-]+::[A-Za-z0-9_.+-]+$")
        # An imported target, found by a find_package in the subdirectory that links it (so not
        # necessarily a target here): attograd-dependencies.cmake must know it.
        attograd_find_dependency(${link} known)
        list(APPEND dependencies ${link})
      else()
        message(FATAL_ERROR "${target} links '${link}': the package attograd reproduces links to "
                            "targets only (cmake/package.cmake)")
      endif()
    endforeach()
  endforeach()
  # In the order the components were declared, which is the order they are loaded in.
  set(ordered "")
  foreach(c IN LISTS components)
    if(c IN_LIST requires)
      list(APPEND ordered ${c})
    endif()
  endforeach()
  list(REMOVE_DUPLICATES dependencies)
  set_property(GLOBAL PROPERTY ATTOGRAD_PACKAGE_REQUIRES_${component} ${ordered})
  set_property(GLOBAL APPEND PROPERTY ATTOGRAD_PACKAGE_COMPONENTS ${component})
  list(JOIN ordered " " ordered_words)
  list(JOIN dependencies " " dependency_words)
  set_property(GLOBAL APPEND_STRING PROPERTY ATTOGRAD_PACKAGE_TABLE
    "set(_attograd_${component}_requires ${ordered_words})\nset(_attograd_${component}_dependencies ${dependency_words})\n")

  install(TARGETS ${ARGN} EXPORT attograd-${component}-targets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT devel
    INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(EXPORT attograd-${component}-targets NAMESPACE attograd:: DESTINATION ${ATTOGRAD_CMAKE_DIR}
    FILE attograd-${component}-targets.cmake COMPONENT devel)
endfunction()

# attograd_install_package(): attogradConfig.cmake (from cmake/attogradConfig.cmake.in, with the
# components' table), its version file and cmake/attograd-dependencies.cmake, after the last
# attograd_package_component.
function(attograd_install_package)
  get_property(components GLOBAL PROPERTY ATTOGRAD_PACKAGE_COMPONENTS)
  get_property(table GLOBAL PROPERTY ATTOGRAD_PACKAGE_TABLE)
  list(JOIN components " " component_words)
  set(ATTOGRAD_PACKAGE_TABLE "set(_attograd_components ${component_words})\n${table}")
  configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/attogradConfig.cmake.in
    ${PROJECT_BINARY_DIR}/attogradConfig.cmake INSTALL_DESTINATION ${ATTOGRAD_CMAKE_DIR})
  write_basic_package_version_file(${PROJECT_BINARY_DIR}/attogradConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
  install(FILES ${PROJECT_BINARY_DIR}/attogradConfig.cmake
    ${PROJECT_BINARY_DIR}/attogradConfigVersion.cmake
    ${PROJECT_SOURCE_DIR}/cmake/attograd-dependencies.cmake
    DESTINATION ${ATTOGRAD_CMAKE_DIR} COMPONENT devel)
endfunction()
