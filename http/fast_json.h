// FastJson: a strict, allocation-light parser for the common shapes of request bodies.
//
// The service's request bodies are small proto3 JSON documents (a node event, a node to
// append). protobuf's JsonStringToMessage goes through a stream parser, a type resolver
// and a binary round trip (about 15 % of the server's CPU per event). TryParseJson parses
// the plain subset by reflection straight into the message: objects, arrays of repeated
// fields, ASCII strings without escapes, integers, decimals for float/double fields, true/false
// and enum names. Whatever lies outside that subset (escapes, null, duplicate keys, maps,
// well-known types, two members of a oneof, numbers in quotes, out-of-range values,
// unknown fields, ...) returns false and leaves the caller to use proto::ParseJson, which
// gives the full mapping and its error messages. When it returns true, the message is
// what proto::ParseJson would produce (tests/http/fast_json_test.cc checks this).
//
// Thread-safety: a pure function.
#pragma once

#include <string_view>

#include <google/protobuf/message.h>

namespace switchyard::http {

// Clears `msg`; on false its contents are unspecified (parse it again with ParseJson).
bool TryParseJson(std::string_view json, google::protobuf::Message* msg);

}  // namespace switchyard::http
