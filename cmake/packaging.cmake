# Debian packages (cpack -G DEB in the build directory):
#   postgresql-15-pg-lease  the extension (named as Debian names PostgreSQL extensions)
#   libpglease-dev          the C++ library: static library, headers, CMake package, pglease.pc
#   pglease                 the command
# Dependencies on shared libraries come from dpkg-shlibdeps.

# The extension is built by PGXS (target `extension`) into the source tree;
# it installs where this server's pg_config says, as `make install` would.
execute_process(COMMAND ${PG_CONFIG} --pkglibdir OUTPUT_VARIABLE PG_PKGLIBDIR OUTPUT_STRIP_TRAILING_WHITESPACE)
execute_process(COMMAND ${PG_CONFIG} --sharedir OUTPUT_VARIABLE PG_SHAREDIR OUTPUT_STRIP_TRAILING_WHITESPACE)
execute_process(COMMAND ${PG_CONFIG} --version OUTPUT_VARIABLE PG_VERSION_STRING OUTPUT_STRIP_TRAILING_WHITESPACE)
string(REGEX MATCH "[0-9]+" PG_MAJOR "${PG_VERSION_STRING}")
file(GLOB PGLEASE_SQL_SCRIPTS ${CMAKE_SOURCE_DIR}/sql/pg_lease--*.sql)
install(FILES ${CMAKE_SOURCE_DIR}/pg_lease.so
    DESTINATION ${PG_PKGLIBDIR} COMPONENT extension)
install(FILES ${CMAKE_SOURCE_DIR}/extension/pg_lease.control ${PGLEASE_SQL_SCRIPTS}
    DESTINATION ${PG_SHAREDIR}/extension COMPONENT extension)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME pg-lease)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "pg_lease developers <pg-lease@example.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "lease-based leader election with fencing tokens, inside PostgreSQL")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL extension development command)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SECTION database)

set(CPACK_DEBIAN_EXTENSION_PACKAGE_NAME postgresql-${PG_MAJOR}-pg-lease)
set(CPACK_DEBIAN_EXTENSION_PACKAGE_DEPENDS "postgresql-${PG_MAJOR}")
set(CPACK_COMPONENT_EXTENSION_DESCRIPTION
    "pg_lease extension for PostgreSQL ${PG_MAJOR}: leases, fencing tokens, the fence trigger")

set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_NAME libpglease-dev)
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_SECTION libdevel)
# The libpqxx line the library was built with (client/CMakeLists.txt):
# Debian 12's libpqxx-dev 6.4, Debian 13's 7.10.
set(CPACK_DEBIAN_DEVELOPMENT_PACKAGE_DEPENDS
    "libpqxx-dev (>= ${PGLEASE_PQXX_VERSION}), libpqxx-dev (<< ${PGLEASE_PQXX_NEXT_LINE}), libpq-dev")
set(CPACK_COMPONENT_DEVELOPMENT_DESCRIPTION
    "pg_lease C++ client library (elector, lease, fenced transactions): headers, static library, CMake package, pkg-config")

set(CPACK_DEBIAN_COMMAND_PACKAGE_NAME pglease)
set(CPACK_COMPONENT_COMMAND_DESCRIPTION
    "pglease: run a job under a pg_lease lease, watch and inspect leases")

include(CPack)
