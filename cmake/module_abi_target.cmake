# imgpack_module_abi(TARGET MACRO HEADER SOURCE...): a custom target, TARGET,
# that writes HEADER defining MACRO as the ABI name of one of imgpack's
# loadable modules, a hash of SOURCE... (the module's sources and the headers
# of what crosses between it and its loader; cmake/module_abi.cmake), and
# writes it again whenever one of them changes.
function(imgpack_module_abi target macro header)
  set(sources ${ARGN})
  list(TRANSFORM sources PREPEND ${CMAKE_CURRENT_SOURCE_DIR}/)
  add_custom_command(OUTPUT ${header}
    COMMAND ${CMAKE_COMMAND} -DOUTPUT=${header} -DMACRO=${macro} -DVERSION=${PROJECT_VERSION}
            "-DSOURCES=${sources}" -P ${PROJECT_SOURCE_DIR}/cmake/module_abi.cmake
    DEPENDS ${sources} ${PROJECT_SOURCE_DIR}/cmake/module_abi.cmake
    COMMENT "Naming ${macro}" VERBATIM)
  add_custom_target(${target} DEPENDS ${header})
endfunction()
