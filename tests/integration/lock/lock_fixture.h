// A LockStore on a fresh index of the test server.
#pragma once

#include "integration/es/es_fixture.h"
#include "lock/acquirer.h"
#include "lock/lock_store.h"

namespace eslease::testing {

struct StoreOnServer {
  StoreOnServer(const std::string& url, const std::string& index, es::ClientOptions options = {}) {
    api = make_api(url, std::move(options));
    lock::StoreOptions store_options;
    store_options.index = index;
    auto made = lock::make_es_lock_store(*api, SystemClock::instance(), store_options);
    EXPECT_TRUE(made.ok());
    store = std::move(made.value());
  }
  std::unique_ptr<es::DocumentApi> api;
  std::unique_ptr<lock::LockStore> store;
};

}  // namespace eslease::testing
