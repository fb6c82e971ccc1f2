package apigw

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// CORS is an HTTP API's CORS configuration (the template's
// CorsConfiguration, `x-amazon-apigateway-cors` in the expanded body).
// API Gateway answers a preflight itself, even where no OPTIONS route
// exists and before any authorizer, and adds the configured headers to
// every answer to a request that names an allowed origin, ignoring the
// CORS headers the integration returns
// (https://docs.aws.amazon.com/apigateway/latest/developerguide/http-api-cors.html).
type CORS struct {
	AllowOrigins     []string
	AllowMethods     []string
	AllowHeaders     []string
	ExposeHeaders    []string
	MaxAge           int
	AllowCredentials bool
}

// CORSFromBody reads `x-amazon-apigateway-cors` from an expanded HTTP API
// body; nil when the API has none.
func CORSFromBody(body map[string]any) (*CORS, error) {
	raw, ok := body["x-amazon-apigateway-cors"].(map[string]any)
	if !ok {
		return nil, nil
	}
	strs := func(key string) ([]string, error) {
		list, _ := raw[key].([]any)
		out := make([]string, 0, len(list))
		for _, v := range list {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("x-amazon-apigateway-cors: %s holds %v, not a string", key, v)
			}
			out = append(out, s)
		}
		return out, nil
	}
	var c CORS
	var err error
	for key, dst := range map[string]*[]string{"allowOrigins": &c.AllowOrigins, "allowMethods": &c.AllowMethods,
		"allowHeaders": &c.AllowHeaders, "exposeHeaders": &c.ExposeHeaders} {
		if *dst, err = strs(key); err != nil {
			return nil, err
		}
	}
	if v, ok := raw["maxAge"]; ok {
		if c.MaxAge, err = strconv.Atoi(fmt.Sprint(v)); err != nil {
			return nil, fmt.Errorf("x-amazon-apigateway-cors: maxAge %v: %w", v, err)
		}
	}
	c.AllowCredentials, _ = raw["allowCredentials"].(bool)
	return &c, nil
}

// Wrap serves next behind the configuration: preflights answered 204 by
// the gateway, the configured headers on every other answer.
func (c *CORS) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if r.Method == http.MethodOptions && origin != "" && r.Header.Get("Access-Control-Request-Method") != "" {
			c.preflight(w, origin, r.Header.Get("Access-Control-Request-Method"))
			return
		}
		if !c.allowsOrigin(origin) {
			origin = "" // the integration's CORS headers are dropped all the same
		}
		next.ServeHTTP(&corsWriter{ResponseWriter: w, cors: c, origin: origin}, r)
	})
}

func (c *CORS) preflight(w http.ResponseWriter, origin, method string) {
	h := w.Header()
	if c.allowsOrigin(origin) && (contains(c.AllowMethods, method) || contains(c.AllowMethods, "*")) {
		h.Set("Access-Control-Allow-Origin", c.allowOrigin(origin))
		h.Set("Access-Control-Allow-Methods", strings.Join(c.AllowMethods, ","))
		if len(c.AllowHeaders) > 0 {
			h.Set("Access-Control-Allow-Headers", strings.ToLower(strings.Join(c.AllowHeaders, ",")))
		}
		if c.MaxAge > 0 {
			h.Set("Access-Control-Max-Age", strconv.Itoa(c.MaxAge))
		}
		if c.AllowCredentials {
			h.Set("Access-Control-Allow-Credentials", "true")
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

func (c *CORS) allowsOrigin(origin string) bool {
	return contains(c.AllowOrigins, "*") || contains(c.AllowOrigins, origin)
}

// allowOrigin is the Access-Control-Allow-Origin value: "*" for a
// wildcard configuration, else the request's own origin.
func (c *CORS) allowOrigin(origin string) string {
	if contains(c.AllowOrigins, "*") && !c.AllowCredentials {
		return "*"
	}
	return origin
}

// contains matches case-insensitively: origins' schemes and hosts,
// methods and header names are compared so by API Gateway.
func contains(list []string, v string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return strings.EqualFold(s, v) })
}

// corsWriter drops the integration's CORS headers and, for an allowed
// origin, sets the configuration's, when the answer's headers are written.
type corsWriter struct {
	http.ResponseWriter
	cors        *CORS
	origin      string
	wroteHeader bool
}

func (cw *corsWriter) WriteHeader(code int) {
	if !cw.wroteHeader {
		cw.wroteHeader = true
		h := cw.Header()
		for name := range h {
			if strings.HasPrefix(http.CanonicalHeaderKey(name), "Access-Control-") {
				h.Del(name)
			}
		}
		if cw.origin == "" {
			cw.ResponseWriter.WriteHeader(code)
			return
		}
		allow := cw.cors.allowOrigin(cw.origin)
		h.Set("Access-Control-Allow-Origin", allow)
		if len(cw.cors.ExposeHeaders) > 0 {
			h.Set("Access-Control-Expose-Headers", strings.ToLower(strings.Join(cw.cors.ExposeHeaders, ",")))
		}
		if cw.cors.AllowCredentials {
			h.Set("Access-Control-Allow-Credentials", "true")
		}
		if allow != "*" {
			h.Add("Vary", "Origin")
		}
	}
	cw.ResponseWriter.WriteHeader(code)
}

func (cw *corsWriter) Write(b []byte) (int, error) {
	if !cw.wroteHeader {
		cw.WriteHeader(http.StatusOK)
	}
	return cw.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection (deadlines).
func (cw *corsWriter) Unwrap() http.ResponseWriter { return cw.ResponseWriter }
