// Where TLS finds the certificate authorities when none is configured. The eslease tool's
// portable bundle carries Debian's OpenSSL, whose built-in default (/usr/lib/ssl) exists in
// Debian images only; these are the places other distributions keep their CA bundle, so
// direct mode verifies Elasticsearch in any image that has one.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace eslease::http {

// Debian and Ubuntu (and Alpine's ca-certificates), Fedora and RHEL, Alpine and the BSDs.
inline const std::vector<std::string> kCaBundleLocations = {
    "/etc/ssl/certs/ca-certificates.crt",
    "/etc/pki/tls/certs/ca-bundle.crt",
    "/etc/ssl/cert.pem",
};

// The first readable file of `ssl_cert_file` (the SSL_CERT_FILE variable, when set) and
// then `locations`; empty when none is, which leaves OpenSSL's own defaults.
std::string find_ca_bundle(const std::optional<std::string>& ssl_cert_file,
                           const std::vector<std::string>& locations = kCaBundleLocations);

// find_ca_bundle with this process's SSL_CERT_FILE.
std::string system_ca_bundle();

}  // namespace eslease::http
