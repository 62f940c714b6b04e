// Runs the tool in direct mode against a fake Elasticsearch and a fake clock, capturing what
// it prints: the fixture of the direct-mode command tests.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.h"
#include "lock/lock_store.h"
#include "support/fake_clock.h"
#include "support/fake_document_api.h"

namespace eslease::cli {

class DirectCliTest : public ::testing::Test {
 protected:
  struct Run {
    int code;
    std::string out;
    std::string err;
  };

  // `clock` stands in for the fake clock when given (a real one, for commands that run).
  Run cli(std::vector<std::string> args, Clock* clock = nullptr) {
    args.insert(args.begin(), {"--es", "http://127.0.0.1:9"});
    std::ostringstream out;
    std::ostringstream err;
    Clock& used = clock != nullptr ? *clock : static_cast<Clock&>(clock_);
    Environment env{
        out,
        err,
        used,
        [this, &used](const lock::ConnectionSettings&) -> Result<std::unique_ptr<lock::LockStore>> {
          ++stores_opened_;
          return lock::make_es_lock_store(api_, used);
        },
        "host",
        42,
        /*connect_kube=*/{},
        /*getenv=*/{},
        /*read_file=*/{}};
    const int code = run_cli(args, env);
    return Run{code, out.str(), err.str()};
  }

  testing::FakeDocumentApi api_;
  testing::FakeClock clock_;
  int stores_opened_ = 0;
};

}  // namespace eslease::cli
