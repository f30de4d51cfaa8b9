/// @file downstream.cpp
/// @brief The downstream phase's database (downstream.hpp).
///
/// Order of downstream writes and raises: a dw_<lease> row gets its place
/// from a deferred constraint trigger at COMMIT (while the writer still
/// holds its token's floor lock), a raise of lease_floor_rows likewise
/// (while the raise holds the old floor's lock exclusively): between a
/// write and a raise that conflict, the order is commit order.
#include "downstream.hpp"

#include "edition.hpp"
#include "phase.hpp"

#include <pqxx/pqxx>

namespace fault {

std::string setup_downstream(const cluster& store, const std::vector<std::string>& leases) {
    std::string store_id;
    {
        const auto conn = patient_connection(store.app_conninfo());
        pqxx::nontransaction tx{*conn};
        store_id = tx.exec1("SELECT lease_store_id()")[0].as<std::string>();
    }
    install_edition_in_new_db(store, downstream_dbname);
    const auto conn = patient_connection(store.owner_conninfo(downstream_dbname));
    pqxx::nontransaction tx{*conn};
    // A raise must end a stalled old writer there within the new grant's
    // local deadline (ttl 1 s - margin 100 ms): the rule of
    // elector_config::downstreams, takeover_timeout < ttl - margin.
    set_takeover_timeout(tx, downstream_dbname, "300ms");
    create_commit_order(tx);
    tx.exec("CREATE TABLE raise_order (id bigserial PRIMARY KEY, name text NOT NULL, "
            "epoch bigint NOT NULL, ord bigint NOT NULL DEFAULT nextval('fault_order'))");
    tx.exec(R"(CREATE FUNCTION fault_raise_order() RETURNS trigger LANGUAGE plpgsql
        SET search_path = public, pg_catalog AS $$
        BEGIN
            INSERT INTO public.raise_order (name, epoch) VALUES (NEW.name, NEW.epoch);
            RETURN NULL;
        END $$)");
    tx.exec("CREATE CONSTRAINT TRIGGER fault_raise_order AFTER INSERT OR UPDATE ON "
            "lease_floor_rows DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "
            "fault_raise_order()");
    for (const auto& l : leases) {
        const std::string dw = "dw_" + l;
        tx.exec("CREATE TABLE " + dw +
                " (id bigserial PRIMARY KEY, lease text NOT NULL, worker text NOT NULL, "
                "seq bigint NOT NULL, epoch bigint NOT NULL, slow boolean NOT NULL DEFAULT false, "
                "UNIQUE (worker, seq))");
        tx.exec("CREATE CONSTRAINT TRIGGER fault_commit_order AFTER INSERT ON " + dw +
                " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION "
                "fault_commit_order()");
        tx.exec("SELECT lease_fence(" + tx.quote(dw) + ", " + tx.quote(l) + ", store => " +
                tx.quote(store_id) + ")");
        grant_to_app(tx, {dw}, {dw + "_id_seq"});
    }
    grant_to_app(tx, {"commit_order", "raise_order"}, {"fault_order", "raise_order_id_seq"},
                 {"lease_raise(text, text, bigint)"});
    return store.app_conninfo() + " dbname=" + downstream_dbname;
}

void read_downstream(const std::string& conninfo, phase_bundle& b,
                     const std::vector<std::string>& leases) {
    const auto conn = patient_connection(conninfo);
    pqxx::read_transaction tx{*conn};
    for (const auto& row : tx.exec("SELECT name, epoch, ord FROM raise_order ORDER BY ord"))
        b.raises.push_back(
            {row[0].as<std::string>(), row[1].as<std::int64_t>(), row[2].as<std::int64_t>()});
    for (const auto& lease : leases) {
        const std::string dw = "dw_" + lease;
        for (const auto& row :
             tx.exec("SELECT w.worker, w.seq, w.epoch, coalesce(c.ord, -1) FROM " + dw +
                     " w LEFT JOIN commit_order c ON c.tbl = " + tx.quote(dw) +
                     " AND c.write_id = w.id"))
            b.downstream_writes.push_back({lease, row[0].as<std::string>(), "",
                                           row[1].as<std::int64_t>(), row[2].as<std::int64_t>(),
                                           row[3].as<std::int64_t>()});
    }
}

} // namespace fault
