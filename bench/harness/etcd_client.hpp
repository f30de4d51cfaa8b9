/// @file etcd_client.hpp
/// @brief etcd's v3 API through its JSON gateway over libcurl: one
/// keep-alive HTTP/1.1 connection per client (kv_figures, many_leases).
#pragma once

#include <curl/curl.h>
#include <nlohmann/json.hpp>

#include <string>

namespace bench {

/// Standard base64 (etcd's JSON gateway wants keys and values in it).
std::string base64(const std::string& in);

/// One keep-alive HTTP/1.1 connection to etcd's gateway. Each post() has a
/// 10 s bound (CURLOPT_TIMEOUT_MS).
class etcd_client {
public:
    explicit etcd_client(std::string base);
    etcd_client(const etcd_client&) = delete;
    etcd_client& operator=(const etcd_client&) = delete;
    ~etcd_client();

    /// POSTs @p body to @p path; the reply's JSON. Throws on a transport
    /// error or a status other than 200.
    nlohmann::json post(const std::string& path, const nlohmann::json& body);

private:
    std::string m_base;
    CURL* m_curl;
    curl_slist* m_headers = nullptr;
    std::string m_body;
};

} // namespace bench
