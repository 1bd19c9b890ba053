# `cmake --install BUILD [--prefix DIR]`: the static libraries with their headers, the `eqfuse`
# tool, the rule library (share/eqfuse/rules) and a CMake package, so that another project
# writes
#   find_package(eqfuse REQUIRED)
#   target_link_libraries(app PRIVATE eqfuse::eqfuse)     # or eqfuse::optimizer, eqfuse::ir, ...
# (tests/install builds and runs such a project against an installed tree).
include(CMakePackageConfigHelpers)

get_property(modules GLOBAL PROPERTY EQFUSE_MODULES)
add_library(eqfuse_all INTERFACE)
target_link_libraries(eqfuse_all INTERFACE ${modules})
set_target_properties(eqfuse_all PROPERTIES EXPORT_NAME eqfuse)
install(TARGETS eqfuse_all EXPORT eqfuseTargets)

install(TARGETS eqfuse eqfuse-bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
file(GLOB library_rules ${PROJECT_SOURCE_DIR}/rules/library/*.rules)
install(FILES ${library_rules} DESTINATION ${CMAKE_INSTALL_DATADIR}/eqfuse/rules)

set(config_dir ${CMAKE_INSTALL_LIBDIR}/cmake/eqfuse)
install(EXPORT eqfuseTargets NAMESPACE eqfuse:: DESTINATION ${config_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/eqfuseConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/eqfuseConfig.cmake
                              INSTALL_DESTINATION ${config_dir})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/eqfuseConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/eqfuseConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/eqfuseConfigVersion.cmake
        DESTINATION ${config_dir})
