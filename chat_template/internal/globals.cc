// The global names of a template: true/false/none (and True/False/None), namespace(),
// range(), raise_exception(), strftime_now(). See interpreter.h.
#include <cmath>
#include <ctime>

#include "chat_template/internal/builtin.h"
#include "chat_template/internal/utf.h"

namespace switchyard::chat_template::internal {
namespace {

// One [key, value] entry of namespace(list): a 2-item list or a 2-character string.
std::pair<std::string, Value> NamespaceEntry(Interpreter& in, const Value& pair, const Node& site) {
  std::vector<Value> parts;
  if (pair.IsList()) {
    parts = pair.items();
  } else if (pair.is(Kind::kString)) {
    for (std::string_view c : CodePoints(pair.str())) parts.push_back(Value::Str(std::string(c)));
  }
  if (parts.size() != 2) {
    in.Error(site, "namespace() expects a dict or a list of [key, value] pairs");
  }
  if (!parts[0].is(Kind::kString)) in.Error(site, "namespace() keys must be strings");
  return {parts[0].str(), parts[1]};
}

Value Namespace(Interpreter& in, std::vector<Value>& args, const Node& site) {
  std::vector<Value> positional = args;
  Value kwargs;
  if (!positional.empty() && positional.back().is(Kind::kKwargs)) {
    kwargs = positional.back();
    positional.pop_back();
  }
  if (positional.size() > 1) in.Error(site, "namespace() takes at most one positional argument");
  auto data = std::make_shared<ObjectData>();
  if (positional.size() == 1) {
    const Value& source = positional[0];
    if (source.IsDict()) {
      for (const auto& [k, v] : source.dict().entries()) data->Set(k, v);
    } else if (source.IsList()) {
      for (const Value& pair : source.items()) {
        auto [k, v] = NamespaceEntry(in, pair, site);
        data->Set(std::move(k), std::move(v));
      }
    } else {
      in.Error(site, std::string("namespace() cannot take a ") + KindName(source));
    }
  }
  if (kwargs.is(Kind::kKwargs)) {
    for (const auto& [k, v] : kwargs.dict().entries()) data->Set(k, v);
  }
  in.Charge(data->size());
  in.TrackNamespace(data);
  return Value::Dict(std::move(data), Kind::kNamespace);
}

// range(stop) / range(start, stop[, step]); numbers as JavaScript computes them.
Value Range(Interpreter& in, std::vector<Value>& args, const Node& site) {
  if (args.empty() || args.size() > 3) in.Error(site, "range() takes 1 to 3 numbers");
  for (const Value& a : args) {
    if (!a.IsNumber()) in.Error(site, std::string("range() takes numbers, got ") + KindName(a));
  }
  double start = 0, stop = args[0].num(), step = 1;
  if (args.size() > 1) start = args[0].num(), stop = args[1].num();
  if (args.size() > 2) step = args[2].num();
  if (step == 0) in.Error(site, "range() step must not be zero");
  const double count = std::ceil((stop - start) / step);
  if (std::isnan(step) || std::isnan(count)) return in.NewList({});
  if (count > 1e6) in.Error(site, "range() would make more than 1000000 items");
  std::vector<Value> out;
  for (double i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (out.size() % 1024 == 0) in.Charge(1024);
    out.push_back(Value::Number(i, std::trunc(i) != i));
  }
  return in.NewList(std::move(out));
}

Value RaiseException(Interpreter& in, std::vector<Value>& args, const Node& site) {
  std::string message;
  for (size_t i = 0; i < args.size(); ++i) {
    if (i > 0) message += ',';
    message += JoinString(args[i], in.max_bytes());
  }
  throw TemplateError{site.pos, std::move(message), /*from_raise=*/true};
}

std::string TwoDigits(int v) { return (v < 10 ? "0" : "") + std::to_string(v); }

Value StrftimeNow(Interpreter& in, std::vector<Value>& args, const Node& site) {
  static const char* kMonths[] = {"January",   "February", "March",    "April",
                                  "May",       "June",     "July",     "August",
                                  "September", "October",  "November", "December"};
  const Value format = ArgAt(args, 0);
  if (!format.is(Kind::kString)) in.Error(site, "strftime_now() takes a format string");
  const Clock* clock = in.clock() != nullptr ? in.clock() : RealClock::Default();
  const std::time_t secs = static_cast<std::time_t>(std::floor(clock->Now().ns / 1e9));
  std::tm tm{};
  gmtime_r(&secs, &tm);
  const std::string& f = format.str();
  std::string out;
  for (size_t i = 0; i < f.size(); ++i) {
    const char c = i + 1 < f.size() && f[i] == '%' ? f[i + 1] : '\0';
    std::string piece;
    switch (c) {
      case 'Y':
        piece = std::to_string(tm.tm_year + 1900);
        break;
      case 'm':
        piece = TwoDigits(tm.tm_mon + 1);
        break;
      case 'd':
        piece = TwoDigits(tm.tm_mday);
        break;
      case 'b':
        piece = std::string(kMonths[tm.tm_mon]).substr(0, 3);
        break;
      case 'B':
        piece = kMonths[tm.tm_mon];
        break;
      case 'H':
        piece = TwoDigits(tm.tm_hour);
        break;
      case 'M':
        piece = TwoDigits(tm.tm_min);
        break;
      case '%':
        piece = "%";
        break;
      default:
        out += f[i];
        continue;
    }
    out += piece;
    ++i;
  }
  return in.NewString(std::move(out), site);
}

}  // namespace

void InstallGlobals(Scope* scope) {
  scope->Set("namespace", MakeBuiltin(Namespace));
  scope->Set("false", Value::Bool(false));
  scope->Set("true", Value::Bool(true));
  scope->Set("none", Value::Null());
  scope->Set("raise_exception", MakeBuiltin(RaiseException));
  scope->Set("range", MakeBuiltin(Range));
  scope->Set("strftime_now", MakeBuiltin(StrftimeNow));
  scope->Set("True", Value::Bool(true));
  scope->Set("False", Value::Bool(false));
  scope->Set("None", Value::Null());
}

}  // namespace switchyard::chat_template::internal
