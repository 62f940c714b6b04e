// How a request's method and decoded path segments name an endpoint, as Elasticsearch's REST
// controller matches them: a known path with another method is a 405, an unknown path a 400.
#pragma once

#include <set>
#include <string>
#include <variant>
#include <vector>

namespace eslease::esemu {

enum class Endpoint {
  kInfo,
  kHealth,
  kIndexCreate,
  kIndexDelete,
  kIndexExists,
  kIndexGet,
  kMapping,
  kPutMapping,
  kPutSettings,
  kRefresh,
  kDocIndex,
  kDocCreate,
  kDocGet,
  kDocHead,
  kDocSource,
  kDocDelete,
  kUpdate,
  kMget,
  kSearch,
  kCount,
  kDeleteByQuery,
  kBulk
};

struct Route {
  Endpoint endpoint = Endpoint::kInfo;
  std::string op;  // the name stats and fault rules use
  std::string index;
  std::string id;
  std::set<std::string> params;  // the query parameters the endpoint accepts
  bool takes_body = false;
};

struct RouteMiss {
  std::vector<std::string> allowed;  // empty: no handler for the path at all
};

std::variant<Route, RouteMiss> route(const std::string& method, const std::vector<std::string>& segments);

}  // namespace eslease::esemu
