#include "profiler/llm_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace npusim::profiler {
namespace {

double ms(const Clock& clock, Cycles cycles) { return clock.to_us(cycles) / 1000.0; }

// Nearest-rank percentile (the smallest value with at least p % of the values at or below it).
double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const auto rank =
      static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(values.size())));
  return values[std::max<std::size_t>(rank, 1) - 1];
}

double round6(double value) { return std::round(value * 1e6) / 1e6; }

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

}  // namespace

LlmFigures llm_figures(const LlmRun& run, const Clock& clock) {
  LlmFigures f;
  std::vector<double> tpot;
  Cycles total = 0;
  double decode_bytes = 0;
  for (const LlmStep& s : run.steps) {
    total += s.cycles();
    if (s.prefill) {
      f.ttft_cycles = s.cycles();
      f.prefill_bounds = s.bounds;
      continue;
    }
    tpot.push_back(ms(clock, s.cycles()));
    decode_bytes += static_cast<double>(s.dram_read_bytes + s.dram_write_bytes);
    add_bounds(f.decode_bounds, s.bounds);
  }
  f.ttft_ms = ms(clock, f.ttft_cycles);
  f.end_to_end_ms = ms(clock, total);
  f.decode_steps = tpot.size();
  if (!tpot.empty()) {
    double sum = 0;
    for (double t : tpot) sum += t;
    const auto n = static_cast<double>(tpot.size());
    f.tpot_mean_ms = sum / n;
    f.tpot_p50_ms = percentile(tpot, 50);
    f.tpot_p99_ms = percentile(tpot, 99);
    f.decode_tokens_per_s = sum > 0 ? static_cast<double>(run.batch) * n / (sum / 1000.0) : 0;
    f.decode_dram_bytes_per_token = decode_bytes / n / static_cast<double>(run.batch);
  }
  return f;
}

void write_llm_summary(std::ostream& out, const LlmRun& run, const Clock& clock) {
  const LlmFigures f = llm_figures(run, clock);
  out << "language model: batch " << run.batch << ", prefill " << run.prefill_tokens
      << " tokens, decode " << f.decode_steps << " tokens (the tables above are the prefill's)\n";
  out << "  time to first token       " << format("%.3f", f.ttft_ms) << " ms (" << f.ttft_cycles
      << " cycles), bound by " << binding_name(f.prefill_bounds) << '\n';
  if (f.decode_steps > 0) {
    out << "  time per output token     mean " << format("%.3f", f.tpot_mean_ms) << " ms, p50 "
        << format("%.3f", f.tpot_p50_ms) << ", p99 " << format("%.3f", f.tpot_p99_ms)
        << ", bound by " << binding_name(f.decode_bounds) << '\n';
    out << "  decode tokens/s           " << format("%.1f", f.decode_tokens_per_s) << '\n';
    out << "  DRAM bytes per token      " << format("%.0f", f.decode_dram_bytes_per_token)
        << " (decode)\n";
  }
  out << "  end to end                " << format("%.3f", f.end_to_end_ms) << " ms\n\n";
}

void write_llm_json(JsonWriter& j, const LlmRun& run, const Clock& clock) {
  const LlmFigures f = llm_figures(run, clock);
  j.begin_object();
  j.field("batch", run.batch);
  j.field("prefill_tokens", run.prefill_tokens);
  j.field("decode_tokens", f.decode_steps);
  j.field("ttft_cycles", f.ttft_cycles);
  j.field("ttft_ms", round6(f.ttft_ms));
  j.field("tpot_mean_ms", round6(f.tpot_mean_ms));
  j.field("tpot_p50_ms", round6(f.tpot_p50_ms));
  j.field("tpot_p99_ms", round6(f.tpot_p99_ms));
  j.field("decode_tokens_per_s", round6(f.decode_tokens_per_s));
  j.field("decode_dram_bytes_per_token", round6(f.decode_dram_bytes_per_token));
  j.field("end_to_end_ms", round6(f.end_to_end_ms));
  j.field("prefill_binding", binding_name(f.prefill_bounds));
  j.field("decode_binding", f.decode_steps > 0 ? binding_name(f.decode_bounds) : "none");
  j.key("steps");
  j.begin_array();
  for (const LlmStep& s : run.steps) {
    j.begin_object(true);
    j.field("phase", s.prefill ? "prefill" : "decode");
    j.field("step", s.index);
    j.field("tokens", s.tokens);
    j.field("context", s.context);
    j.field("commands", s.commands);
    j.field("estimate_cycles", s.estimate_cycles);
    if (s.runtime_cycles) j.field("runtime_cycles", *s.runtime_cycles);
    j.field("ms", round6(ms(clock, s.cycles())));
    j.field("macs", s.macs);
    j.field("dram_read_bytes", s.dram_read_bytes);
    j.field("dram_write_bytes", s.dram_write_bytes);
    j.field("binding", binding_name(s.bounds));
    j.end_object();
  }
  j.end_array();
  j.end_object();
}

void write_llm_csv(std::ostream& out, const LlmRun& run, const Clock& clock) {
  out << "phase,step,tokens,context,commands,estimate_cycles,runtime_cycles,ms,macs,"
         "dram_read_bytes,dram_write_bytes,binding\n";
  for (const LlmStep& s : run.steps) {
    out << (s.prefill ? "prefill" : "decode") << ',' << s.index << ',' << s.tokens << ','
        << s.context << ',' << s.commands << ',' << s.estimate_cycles << ','
        << (s.runtime_cycles ? std::to_string(*s.runtime_cycles) : "") << ','
        << format("%.6f", ms(clock, s.cycles())) << ',' << s.macs << ',' << s.dram_read_bytes << ','
        << s.dram_write_bytes << ',' << binding_name(s.bounds) << '\n';
  }
}

}  // namespace npusim::profiler
