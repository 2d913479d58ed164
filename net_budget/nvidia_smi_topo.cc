// ParseNvidiaSmiTopo and ParseCpuList (see discovery.h).
#include <cctype>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "net_budget/discovery.h"

namespace switchyard::net_budget {
namespace {

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

std::vector<std::string> SplitTabs(const std::string& line) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : line) {
    if (c == '\t') {
      out.push_back(Trim(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(Trim(cur));
  return out;
}

bool IsExtraHeader(const std::string& h) {
  return h.find("Affinity") != std::string::npos || h.find("NUMA ID") != std::string::npos;
}

NvidiaSmiTopo::Cell ParseCell(const std::string& t) {
  using R = NvidiaSmiTopo::Relation;
  NvidiaSmiTopo::Cell c;
  c.text = t;
  if (t == "X") {
    c.relation = R::kSelf;
  } else if (t.size() > 2 && t.rfind("NV", 0) == 0 &&
             t.find_first_not_of("0123456789", 2) == std::string::npos) {
    c.relation = R::kNvLink;
    c.nvlinks = std::stoi(t.substr(2));
  } else if (t == "PIX") {
    c.relation = R::kPix;
  } else if (t == "PXB") {
    c.relation = R::kPxb;
  } else if (t == "PHB") {
    c.relation = R::kPhb;
  } else if (t == "NODE") {
    c.relation = R::kNode;
  } else if (t == "SYS" || t == "SOC") {
    c.relation = R::kSys;
  }
  return c;
}

// InvalidArgument naming line `lineno` of the output.
Status Bad(int lineno, const std::string& what) {
  return Status::InvalidArgument("nvidia-smi topo line " + std::to_string(lineno) + ": " + what);
}

// The header line: device columns into out->devices, the columns after them ("CPU
// Affinity", ...) into `extra_headers`.
Status ParseHeader(const std::string& line, int lineno, NvidiaSmiTopo* out,
                   std::vector<std::string>* extra_headers) {
  for (const auto& h : SplitTabs(line)) {
    if (h.empty()) continue;
    if (IsExtraHeader(h)) {
      extra_headers->push_back(h);
    } else if (extra_headers->empty()) {
      out->devices.push_back(h);
    }
  }
  if (out->devices.empty()) return Bad(lineno, "no device columns in the header");
  return Status::OK();
}

// The next matrix row: its cells into out->matrix, its CPU and NUMA affinity (the columns
// `extra_headers` names) into out->cpu_affinity and out->numa_affinity.
Status ParseRow(const std::string& line, int lineno, const std::vector<std::string>& extra_headers,
                NvidiaSmiTopo* out) {
  auto cols = SplitTabs(line);
  if (cols[0] != out->devices[out->matrix.size()]) {
    return Bad(lineno,
               "expected row '" + out->devices[out->matrix.size()] + "', got '" + cols[0] + "'");
  }
  if (cols.size() < out->devices.size() + 1) {
    return Bad(lineno, "row '" + cols[0] + "' has " + std::to_string(cols.size() - 1) +
                           " cells, expected " + std::to_string(out->devices.size()));
  }
  std::vector<NvidiaSmiTopo::Cell> row;
  for (size_t i = 0; i < out->devices.size(); ++i) {
    row.push_back(ParseCell(cols[i + 1]));
    if (row.back().relation == NvidiaSmiTopo::Relation::kUnknown) {
      return Bad(lineno, "unknown relation '" + cols[i + 1] + "' between " + cols[0] + " and " +
                             out->devices[i]);
    }
  }
  std::vector<std::string> extras;
  for (size_t i = out->devices.size() + 1; i < cols.size(); ++i) {
    if (!cols[i].empty()) extras.push_back(cols[i]);
  }
  std::string cpu, numa;
  for (size_t i = 0; i < extras.size() && i < extra_headers.size(); ++i) {
    if (extra_headers[i] == "CPU Affinity") cpu = extras[i];
    if (extra_headers[i] == "NUMA Affinity") numa = extras[i];
  }
  out->cpu_affinity.push_back(cpu);
  out->numa_affinity.push_back(numa);
  out->matrix.push_back(std::move(row));
  return Status::OK();
}

}  // namespace

Result<NvidiaSmiTopo> ParseNvidiaSmiTopo(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  NvidiaSmiTopo out;
  std::vector<std::string> extra_headers;
  int lineno = 0;
  bool header_seen = false, in_nic_legend = false;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    std::string t = Trim(line);
    if (!header_seen) {
      if (t.empty()) continue;
      SY_RETURN_IF_ERROR(ParseHeader(line, lineno, &out, &extra_headers));
      header_seen = true;
      continue;
    }
    if (t.rfind("NIC Legend", 0) == 0) {
      in_nic_legend = true;
      continue;
    }
    if (in_nic_legend) {
      auto colon = t.find(':');
      if (colon != std::string::npos) {
        out.nic_legend.emplace_back(Trim(t.substr(0, colon)), Trim(t.substr(colon + 1)));
      }
      continue;
    }
    if (out.matrix.size() == out.devices.size()) continue;  // legend text after the matrix
    if (t.empty()) continue;
    SY_RETURN_IF_ERROR(ParseRow(line, lineno, extra_headers, &out));
  }
  if (!header_seen) return Status::InvalidArgument("nvidia-smi topo: empty output");
  if (out.matrix.size() != out.devices.size()) {
    return Status::InvalidArgument("nvidia-smi topo: matrix has " +
                                   std::to_string(out.matrix.size()) + " rows for " +
                                   std::to_string(out.devices.size()) + " devices");
  }
  return out;
}

Result<std::vector<int>> ParseCpuList(const std::string& text) {
  std::vector<int> cpus;
  std::string t = Trim(text);
  if (t.empty()) return cpus;
  std::stringstream ss(t);
  std::string part;
  while (std::getline(ss, part, ',')) {
    part = Trim(part);
    auto bad = [&] {
      return Status::InvalidArgument("cpulist '" + t + "': bad item '" + part + "'");
    };
    if (part.empty() || part.find_first_not_of("0123456789-") != std::string::npos) return bad();
    auto dash = part.find('-');
    try {
      if (dash == std::string::npos) {
        cpus.push_back(std::stoi(part));
      } else {
        int lo = std::stoi(part.substr(0, dash)), hi = std::stoi(part.substr(dash + 1));
        if (hi < lo) return bad();
        for (int c = lo; c <= hi; ++c) cpus.push_back(c);
      }
    } catch (...) {
      return bad();
    }
  }
  return cpus;
}

}  // namespace switchyard::net_budget
