// The OpenAPI 3 document served at /openapi.json: serve/openapi.json, embedded at build
// time (serve/CMakeLists.txt). Every POST has a request example that the service accepts
// (tests/serve/openapi_test.cc posts each of them).
#include <string>

#include "serve/http_api.h"

namespace switchyard::serve {

extern const char kOpenApiJson[];
extern const unsigned long kOpenApiJsonSize;

const std::string& OpenApiDocument() {
  static const std::string kDoc(kOpenApiJson, kOpenApiJsonSize);
  return kDoc;
}

}  // namespace switchyard::serve
