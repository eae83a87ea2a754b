package server

import _ "embed"

// OpenAPI is the API's description (openapi.yaml), checked against the
// handlers by the tests.
//
//go:embed openapi.yaml
var OpenAPI []byte
