// Durations as people write them on a command line or in a config file: 500ms, 30s, 5m,
// 1h, 1m30s. Shared by the eslease tool and the controller's configuration, so both read
// the same forms.
#pragma once

#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/result.h"

namespace eslease {

// kInvalidArgument naming the accepted forms on anything else (bare numbers included,
// so "30" is never silently read as milliseconds or seconds; only "0" needs no unit, as in Go).
Result<Millis> parse_duration(std::string_view text);
// An exact form in the largest whole unit: 1500ms -> "1500ms", 30000ms -> "30s".
std::string format_duration(Millis d);

}  // namespace eslease
