/// @file etcd_client.cpp
/// @brief etcd's JSON gateway over libcurl.
#include "etcd_client.hpp"

#include <stdexcept>

namespace bench {

namespace {

std::size_t collect(char* data, std::size_t size, std::size_t n, void* user) {
    static_cast<std::string*>(user)->append(data, size * n);
    return size * n;
}

} // namespace

std::string base64(const std::string& in) {
    static const char* tbl = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    std::size_t i = 0;
    for (; i + 2 < in.size(); i += 3) {
        const unsigned v = (static_cast<unsigned char>(in[i]) << 16) |
                           (static_cast<unsigned char>(in[i + 1]) << 8) |
                           static_cast<unsigned char>(in[i + 2]);
        out += tbl[(v >> 18) & 63];
        out += tbl[(v >> 12) & 63];
        out += tbl[(v >> 6) & 63];
        out += tbl[v & 63];
    }
    if (i + 1 == in.size()) {
        const unsigned v = static_cast<unsigned char>(in[i]) << 16;
        out += tbl[(v >> 18) & 63];
        out += tbl[(v >> 12) & 63];
        out += "==";
    } else if (i + 2 == in.size()) {
        const unsigned v = (static_cast<unsigned char>(in[i]) << 16) |
                           (static_cast<unsigned char>(in[i + 1]) << 8);
        out += tbl[(v >> 18) & 63];
        out += tbl[(v >> 12) & 63];
        out += tbl[(v >> 6) & 63];
        out += '=';
    }
    return out;
}

etcd_client::etcd_client(std::string base)
    : m_base(std::move(base))
    , m_curl(curl_easy_init()) {
    if (!m_curl)
        throw std::runtime_error("curl_easy_init failed");
    m_headers = curl_slist_append(m_headers, "Content-Type: application/json");
    m_headers = curl_slist_append(m_headers, "Expect:");
    curl_easy_setopt(m_curl, CURLOPT_HTTPHEADER, m_headers);
    curl_easy_setopt(m_curl, CURLOPT_WRITEFUNCTION, collect);
    curl_easy_setopt(m_curl, CURLOPT_WRITEDATA, &m_body);
    curl_easy_setopt(m_curl, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(m_curl, CURLOPT_TIMEOUT_MS, 10000L);
    curl_easy_setopt(m_curl, CURLOPT_NOSIGNAL, 1L);
}

etcd_client::~etcd_client() {
    curl_slist_free_all(m_headers);
    curl_easy_cleanup(m_curl);
}

nlohmann::json etcd_client::post(const std::string& path, const nlohmann::json& body) {
    const std::string text = body.dump();
    const std::string url = m_base + path;
    m_body.clear();
    curl_easy_setopt(m_curl, CURLOPT_URL, url.c_str());
    curl_easy_setopt(m_curl, CURLOPT_POSTFIELDS, text.c_str());
    curl_easy_setopt(m_curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(text.size()));
    const CURLcode rc = curl_easy_perform(m_curl);
    if (rc != CURLE_OK)
        throw std::runtime_error("etcd " + path + ": " + curl_easy_strerror(rc));
    long status = 0;
    curl_easy_getinfo(m_curl, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200)
        throw std::runtime_error("etcd " + path + ": HTTP " + std::to_string(status) + " " +
                                 m_body);
    return nlohmann::json::parse(m_body);
}

} // namespace bench
