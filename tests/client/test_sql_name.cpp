/// @file test_sql_name.cpp
/// @brief qualified_name(): the schema is quoted, so no schema name can
/// change the statement it is spliced into.
#include <pglease/internal/sql_name.hpp>

#include <gtest/gtest.h>

TEST(qualified_name, an_empty_schema_leaves_the_name_to_the_search_path) {
    EXPECT_EQ(pglease::qualified_name("", "lease_status"), "lease_status");
}

TEST(qualified_name, the_schema_is_quoted_as_an_identifier) {
    EXPECT_EQ(pglease::qualified_name("ops", "lease_status"), "\"ops\".lease_status");
    EXPECT_EQ(pglease::qualified_name("Ops Team", "leases"), "\"Ops Team\".leases");
}

TEST(qualified_name, quotes_inside_the_schema_are_doubled) {
    EXPECT_EQ(pglease::qualified_name("a\"; DROP TABLE leases; --", "leases"),
              "\"a\"\"; DROP TABLE leases; --\".leases");
}
