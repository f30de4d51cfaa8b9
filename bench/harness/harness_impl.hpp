#pragma once

#include <thread>

namespace bench {

template <class W>
std::vector<std::unique_ptr<W>> open_workers(std::size_t clients,
                                             const std::function<std::unique_ptr<W>(std::size_t)>& make) {
    std::vector<std::unique_ptr<W>> out(clients);
    std::vector<std::exception_ptr> errors(clients);
    std::vector<std::thread> threads;
    threads.reserve(clients);
    for (std::size_t i = 0; i < clients; ++i)
        threads.emplace_back([&, i] {
            try {
                out[i] = make(i);
            } catch (...) {
                errors[i] = std::current_exception();
            }
        });
    for (auto& t : threads)
        t.join();
    for (auto& e : errors)
        if (e)
            std::rethrow_exception(e);
    return out;
}

} // namespace bench
