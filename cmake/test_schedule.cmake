# How the suites share the machine when CTest runs them side by side
# (scripts/test.sh runs `ctest -j`, nproc + 1 at once): one table for every
# suite, applied by pglease_schedule_tests() at the end of each
# CMakeLists.txt that adds tests. Most suites start clusters of their own
# and spend their time waiting (on servers, timeouts, fault phases), so
# they run beside each other. What they must not share:
#
#   main_server  the server scripts/test.sh starts: its suites run one at
#                a time (they time renewals and step-downs on it);
#   cores        builds, fuzzers, benchmarks and package builds take whole
#                cores, and the fault suites judge liveness by bounds that
#                a starved core breaks (fault.short failed beside a build):
#                one of these at a time, and a build counts as two slots;
#   major_N      scripts/pg-major.sh's tree of PostgreSQL N (its build
#                folder and installed pg_lease): one suite of N at a time
#                (the SQL edition's sql_edition.*.N need the server alone,
#                --server-only, and run beside them);
#   dpkg         the system's package database (suites that install, or
#                hold its lock on purpose).
#
# COST starts the long suites first (a fresh clone has no timings yet);
# CTest then keeps its own measured costs in Testing/Temporary.

# pglease_schedule_tests(): the properties of this directory's tests.
function(pglease_schedule_tests)
    get_property(tests DIRECTORY PROPERTY TESTS)
    foreach(test IN LISTS tests)
        set(locks)
        set(props)
        # The test command's server.
        if(test MATCHES "^cli\\.(run_|status_|primitives$|usage$|fence$)"
                AND NOT test MATCHES "^cli\\.(run_connect|run_http)$")
            list(APPEND locks main_server)
        elseif(test MATCHES "^(extension\\.pg_regress_and_isolation|platforms\\.(suites|package)\\..*)$")
            list(APPEND locks main_server)
        endif()
        # Whole cores.
        if(test MATCHES "^(fuzz|bench|fault)\\.|^(platforms\\.headers|net\\.group)$|^packages\\.")
            list(APPEND locks cores)
        elseif(test MATCHES "^platforms\\.build\\.")
            list(APPEND locks cores)
            list(APPEND props PROCESSORS 2)
        endif()
        # Another major's tree.
        # (The SQL edition's suites of N take the server alone, which
        # scripts/pg-major.sh --server-only never writes once fetched.)
        if(test MATCHES "^(majors|packages\\.major)\\.([0-9]+)$")
            list(APPEND locks major_${CMAKE_MATCH_2})
        endif()
        # Suites that take dpkg's lock (or install what they lack).
        if(test MATCHES "^(deps\\.apt_lock_wait|packages\\.install|examples\\.languages|ha\\.short|ha\\.pgaf)$")
            list(APPEND locks dpkg)
        endif()
        # Seconds on a quiet 2-core machine, rounded: the longest first.
        # The platform builds go before fault.short (they share cores), as
        # the platform suites wait for them.
        if(test MATCHES "^platforms\\.build\\.")
            list(APPEND props COST 700)
        elseif(test MATCHES "^fault\\.short(\\.sql_edition)?$")
            list(APPEND props COST 600)
        elseif(test MATCHES "^majors\\.")
            list(APPEND props COST 300)
        elseif(test MATCHES "^(platforms\\.suites\\.|bench\\.peers_smoke$)")
            list(APPEND props COST 220)
        elseif(test MATCHES "^sql_edition\\.(cli|client)")
            list(APPEND props COST 140)
        endif()
        if(locks)
            set_property(TEST ${test} APPEND PROPERTY RESOURCE_LOCK ${locks})
        endif()
        if(props)
            set_tests_properties(${test} PROPERTIES ${props})
        endif()
    endforeach()
endfunction()
