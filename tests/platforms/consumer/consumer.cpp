/// A program outside the source tree, built with find_package(pglease)
/// against an installed pglease and the libpqxx it was built with: it
/// leads, writes through run_fenced, and is refused once another holder
/// took the lease over (tests/platforms/consumer.sh).
///
///   consumer LEASE TABLE     (PG* variables name the server)
#include <pglease/pglease.hpp>

#include <pqxx/pqxx>

#include <iostream>
#include <string>

int main(int argc, char** argv) {
    if (argc != 3) {
        std::cerr << "usage: consumer LEASE TABLE\n";
        return 2;
    }
    const std::string name = argv[1];
    const std::string table = argv[2];
    try {
        pglease::connection_options options;
        options.application_name = "pglease-consumer";
        pglease::pq_backend db{options};
        pglease::lease leader{db, name, {}};
        if (!leader.acquire()) {
            std::cerr << "lease " << name << " is held elsewhere\n";
            return 3;
        }
        std::cout << "leading with epoch " << leader.epoch() << std::endl;

        pqxx::connection app{""};
        const std::string insert = "INSERT INTO " + app.quote_name(table) + " (note) VALUES ";
        leader.run_fenced(app, [&](pqxx::transaction_base& tx) { tx.exec(insert + "('leader')"); });
        std::cout << "wrote as leader" << std::endl;

        // Another holder takes the lease over; the old token must be refused.
        const pglease::fence_token stale = leader.token();
        {
            pqxx::nontransaction admin{app};
            admin.exec("SELECT lease_revoke(" + admin.quote(name) + ")");
        }
        pglease::pq_backend other_db{options};
        pglease::lease other{other_db, name, {}};
        if (!other.acquire()) {
            std::cerr << "the second holder was not granted the lease\n";
            return 4;
        }
        try {
            pglease::run_fenced(app, stale,
                                [&](pqxx::transaction_base& tx) { tx.exec(insert + "('stale')"); });
            std::cerr << "a stale write committed\n";
            return 5;
        } catch (const pglease::fence_rejected& e) {
            std::cout << "refused when stale (" << e.sqlstate() << ")" << std::endl;
        }
        other.run_fenced(app, [&](pqxx::transaction_base& tx) { tx.exec(insert + "('new')"); });
        std::cout << "the new holder wrote" << std::endl;
        return 0;
    } catch (const std::exception& e) {
        std::cerr << "consumer: " << e.what() << "\n";
        return 1;
    }
}
