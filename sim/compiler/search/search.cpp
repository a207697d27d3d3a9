#include "sim/compiler/search/search.h"

#include <stdexcept>

#include "sim/compiler/search/cost_search.h"
#include "sim/compiler/search/greedy.h"

namespace npusim {

std::vector<std::string> search_names() { return {"cost", "greedy"}; }

std::unique_ptr<Search> make_search(std::string_view name) {
  if (name == "cost") return std::make_unique<CostSearch>();
  if (name == "greedy") return std::make_unique<GreedySearch>();
  std::string known;
  for (const std::string& n : search_names()) known += (known.empty() ? "" : ", ") + n;
  throw std::invalid_argument("unknown mapping search '" + std::string(name) +
                              "' (known: " + known + ")");
}

}  // namespace npusim
