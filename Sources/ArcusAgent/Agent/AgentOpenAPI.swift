/// The agent's HTTP API as an OpenAPI 3.1 document, served at `GET /v1/openapi.json`.
/// `AgentOpenAPITests` checks that its paths are exactly `AgentHTTPAPI.routes` (a route added to
/// the table and not described here fails them) and that the agent serves it as it is here.
///
/// It describes only what the handlers really answer: every error is `{"error": "…"}`; the
/// status document and the presence graph list the keys they always have and leave room for more.
enum AgentOpenAPI {
    static let json: String = #"""
{
  "openapi": "3.1.0",
  "info": {
    "title": "Arcus agent API",
    "version": "1",
    "description": "The local HTTP API of an Arcus edge sync agent (Docs/Agent.md, Routes): DQL statements, observers as server-sent events, subscriptions, the presence graph, the agent's status, attachments, revocation lists and Prometheus metrics. Every request is checked before any route runs: its Host must name the agent (else 421), a browser's request must come from the agent's own pages (else 403), and every route but the status page (GET /) wants the header Authorization: Bearer <token>, the 64 hex digits in DATA/api-token (else 401). Every JSON request body is an object of at most 1 MiB sent as Content-Type: application/json (else 413, 415). Every error is a JSON object {\"error\": \"...\"} with a 4xx status, or a 5xx for a failure of the agent itself; a rejected request changes nothing in the store."
  },
  "servers": [
    {"url": "http://127.0.0.1:4747", "description": "the agent's default --http address"}
  ],
  "security": [{"bearerAuth": []}],
  "paths": {
    "/": {
      "get": {
        "operationId": "getStatusPage",
        "summary": "The status page",
        "description": "One self-contained HTML page that polls GET /v1/status (with the token the link from `arcus status --page` carries) and draws the mesh, sync, store, subscriptions and attachment fetches. Served without the token: it holds no data.",
        "security": [],
        "responses": {
          "200": {
            "description": "The page.",
            "content": {"text/html": {"schema": {"type": "string"}}}
          },
          "403": {"$ref": "#/components/responses/Forbidden"},
          "421": {"$ref": "#/components/responses/Misdirected"}
        }
      }
    },
    "/v1/openapi.json": {
      "get": {
        "operationId": "getOpenAPI",
        "summary": "This description of the API",
        "responses": {
          "200": {
            "description": "The OpenAPI 3.1 document.",
            "content": {"application/json": {"schema": {"type": "object", "required": ["openapi", "info", "paths"], "additionalProperties": true}}}
          },
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"},
          "421": {"$ref": "#/components/responses/Misdirected"}
        }
      }
    },
    "/v1/status": {
      "get": {
        "operationId": "getStatus",
        "summary": "The agent at a glance",
        "description": "What `arcus status` prints and the status page draws (Docs/Agent.md, Status).",
        "responses": {
          "200": {
            "description": "The status document.",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Status"}}}
          },
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"},
          "421": {"$ref": "#/components/responses/Misdirected"}
        }
      }
    },
    "/v1/execute": {
      "post": {
        "operationId": "execute",
        "summary": "Run a DQL statement",
        "description": "Runs one DQL statement with its arguments. With `wait_synced`, a write is answered only once each peer named holds it, or with 504 after `timeout` seconds (the write is committed here either way).",
        "requestBody": {
          "required": true,
          "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ExecuteRequest"}}}
        },
        "responses": {
          "200": {
            "description": "The statement's result, exactly what `arcus exec` prints.",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/QueryResult"}}}
          },
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"},
          "413": {"$ref": "#/components/responses/ContentTooLarge"},
          "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
          "421": {"$ref": "#/components/responses/Misdirected"},
          "504": {
            "description": "With `wait_synced`: the write is committed here, but some peer named did not hold it within `timeout` seconds. `error` says who and why; `unsynced` lists them.",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Unsynced"}}}
          }
        }
      }
    },
    "/v1/observe": {
      "get": {
        "operationId": "observe",
        "summary": "Observe a SELECT as server-sent events",
        "description": "Streams one `result` event with the current result at once, then one after every commit (local or synced) that changes it. Each event's data is a JSON object {\"items\": [...], \"diff\": {\"insertions\": [...], \"deletions\": [...], \"updates\": [...], \"moves\": [{\"from\", \"to\"}]}}. The observer is cancelled when the client goes away; the stream ends when the agent stops.",
        "parameters": [
          {
            "name": "q", "in": "query", "required": true,
            "description": "The SELECT to observe.",
            "schema": {"type": "string", "minLength": 1}
          },
          {
            "name": "args", "in": "query", "required": false,
            "description": "The statement's arguments, a JSON object.",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Arguments"}}}
          }
        ],
        "responses": {
          "200": {
            "description": "Server-sent events: `event: result` and `data: <JSON>`, as described above.",
            "content": {"text/event-stream": {"schema": {
              "description": "One event (OpenAPI 3.1 has no itemSchema: as schemathesis reads it, the schema of each parsed event).",
              "type": "object",
              "required": ["event", "data"],
              "properties": {
                "event": {"const": "result"},
                "data": {"type": "string", "contentMediaType": "application/json", "description": "{\"items\": [...], \"diff\": {\"insertions\", \"deletions\", \"updates\", \"moves\"}}"}
              }
            }}}
          },
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"},
          "421": {"$ref": "#/components/responses/Misdirected"},
          "503": {
            "description": "The agent is stopping.",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
          }
        }
      }
    },
    "/v1/subscriptions": {
      "get": {
        "operationId": "listSubscriptions",
        "summary": "The active subscriptions and their sync progress",
        "responses": {
          "200": {
            "description": "Every active subscription, with its sync with each connected peer (Docs/Agent.md, Sync progress).",
            "content": {"application/json": {"schema": {
              "type": "object",
              "required": ["subscriptions"],
              "properties": {"subscriptions": {"type": "array", "items": {"$ref": "#/components/schemas/Subscription"}}},
              "additionalProperties": false
            }}}
          },
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"},
          "421": {"$ref": "#/components/responses/Misdirected"}
        }
      },
      "post": {
        "operationId": "subscribe",
        "summary": "Subscribe to a query",
        "description": "Registers a subscription: peers send this agent the documents the query matches. Subscribing to the same query again returns the same id.",
        "requestBody": {
          "required": true,
          "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SubscribeRequest"}}}
        },
        "responses": {
          "201": {
            "description": "The subscription.",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SubscriptionCreated"}}}
          },
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"},
          "413": {"$ref": "#/components/responses/ContentTooLarge"},
          "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
          "421": {"$ref": "#/components/responses/Misdirected"}
        }
      }
    },
    "/v1/subscriptions/{id}": {
      "delete": {
        "operationId": "unsubscribe",
        "summary": "Cancel a subscription",
        "parameters": [
          {
            "name": "id", "in": "path", "required": true,
            "description": "The subscription's id, as POST /v1/subscriptions answered it.",
            "schema": {"type": "integer", "minimum": 0, "maximum": 18446744073709551615}
          }
        ],
        "responses": {
          "200": {
            "description": "The subscription is cancelled.",
            "content": {"application/json": {"schema": {
              "type": "object",
              "required": ["id", "cancelled"],
              "properties": {"id": {"type": "integer"}, "cancelled": {"const": true}},
              "additionalProperties": false
            }}}
          },
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"},
          "404": {"$ref": "#/components/responses/NotFound"},
          "421": {"$ref": "#/components/responses/Misdirected"}
        }
      }
    },
    "/v1/peers": {
      "get": {
        "operationId": "getPeers",
        "summary": "The presence graph",
        "description": "Every peer known (this agent first), every link between two of them, the route to each peer reached, and the connection policy's latest decisions (Docs/Agent.md, Peers).",
        "responses": {
          "200": {
            "description": "The presence graph.",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Peers"}}}
          },
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"},
          "421": {"$ref": "#/components/responses/Misdirected"}
        }
      }
    },
    "/v1/logs": {
      "get": {
        "operationId": "getLogs",
        "summary": "The last lines of the agent's log",
        "description": "From the log files in the data directory (logs/arcus.log and its compressed predecessors), oldest first (Docs/Agent.md, Logs).",
        "parameters": [
          {"name": "lines", "in": "query", "required": false, "schema": {"type": "integer", "minimum": 1, "maximum": 100000, "default": 1000}, "description": "How many lines."}
        ],
        "responses": {
          "200": {
            "description": "The lines, each ending with a newline.",
            "content": {"text/plain": {"schema": {"type": "string"}}}
          },
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"},
          "409": {
            "description": "The agent keeps no log files: under systemd the journal holds its log (the message says how to read it).",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
          },
          "421": {"$ref": "#/components/responses/Misdirected"}
        }
      }
    },
    "/metrics": {
      "get": {
        "operationId": "getMetrics",
        "summary": "Prometheus metrics",
        "description": "The Prometheus text exposition format, version 0.0.4 (Docs/Agent.md, Metrics).",
        "responses": {
          "200": {
            "description": "The metrics.",
            "content": {"text/plain": {"schema": {"type": "string"}}}
          },
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"},
          "421": {"$ref": "#/components/responses/Misdirected"}
        }
      }
    },
    "/v1/attachments": {
      "post": {
        "operationId": "uploadAttachment",
        "summary": "Store an attachment in a document's field",
        "description": "Stores the body as a blob (at most 256 MiB) and sets its token at `field` of document `id` of `collection`, created when absent. The body may have any media type but those a web page can send anywhere unasked (text/plain, forms) or none (415).",
        "parameters": [
          {"name": "collection", "in": "query", "required": true, "description": "The document's collection: 1 to 256 bytes of UTF-8 without control characters (here at most 64 characters, which is within that).", "schema": {"type": "string", "minLength": 1, "maxLength": 64, "pattern": "^[^\\u0000-\\u001F\\u007F-\\u009F]+$"}},
          {"name": "id", "in": "query", "required": true, "description": "The document's _id (a string).", "schema": {"type": "string", "minLength": 1}},
          {
            "name": "field", "in": "query", "required": true,
            "description": "Where the token goes, dotted for nested fields (photo.full): no empty part, not _id, at most 64 levels.",
            "schema": {"type": "string", "minLength": 1}
          },
          {"name": "name", "in": "query", "required": false, "description": "A name for the blob, kept in the token's metadata as `name`.", "schema": {"type": "string"}}
        ],
        "requestBody": {
          "required": true,
          "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}
        },
        "responses": {
          "201": {
            "description": "The blob is stored and its token set; the token and where it went.",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/AttachmentStored"}}}
          },
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"},
          "413": {"$ref": "#/components/responses/ContentTooLarge"},
          "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
          "421": {"$ref": "#/components/responses/Misdirected"},
          "500": {"$ref": "#/components/responses/AgentFailure"}
        }
      },
      "get": {
        "operationId": "listAttachmentFetches",
        "summary": "The attachment fetches under way",
        "responses": {
          "200": {
            "description": "Every fetch under way, sorted by hash.",
            "content": {"application/json": {"schema": {
              "type": "object",
              "required": ["fetches"],
              "properties": {"fetches": {"type": "array", "items": {"$ref": "#/components/schemas/AttachmentFetch"}}},
              "additionalProperties": false
            }}}
          },
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"},
          "421": {"$ref": "#/components/responses/Misdirected"}
        }
      }
    },
    "/v1/attachments/{hash}": {
      "get": {
        "operationId": "downloadAttachment",
        "summary": "An attachment's bytes, fetched from peers first if need be",
        "description": "The blob when this store has it. Otherwise the agent fetches it from its peers in the background (one fetch per blob) and answers 202 with the fetch's progress: ask again until 200.",
        "parameters": [
          {
            "name": "hash", "in": "path", "required": true,
            "description": "The blob's SHA-256, the 64 hex digits of `_attachment` in the document that holds it.",
            "schema": {"type": "string", "pattern": "^[0-9a-fA-F]{64}$"}
          }
        ],
        "responses": {
          "200": {
            "description": "The blob's bytes, with Content-Length.",
            "content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}
          },
          "202": {
            "description": "This store lacks the blob; the agent is fetching it.",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/AttachmentFetch"}}}
          },
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"},
          "404": {"$ref": "#/components/responses/NotFound"},
          "421": {"$ref": "#/components/responses/Misdirected"},
          "500": {"$ref": "#/components/responses/AgentFailure"},
          "502": {
            "description": "The fetch failed (the peers that had the blob sent bytes that did not match it); the next request tries again.",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
          }
        }
      }
    },
    "/v1/mesh/revocations": {
      "post": {
        "operationId": "adoptRevocationList",
        "summary": "Hand the agent the mesh authority's revocation list",
        "description": "The list is checked against the mesh's authority, adopted if newer than the one in force, passed on to every peer, and the revoked peers cut (Docs/Agent.md, Revoking a peer).",
        "requestBody": {
          "required": true,
          "content": {"application/json": {"schema": {
            "type": "object",
            "required": ["list"],
            "properties": {"list": {"type": "string", "contentEncoding": "base64", "description": "The bytes of the file `arcus mesh revoke` wrote, in base64."}},
            "additionalProperties": false
          }}}
        },
        "responses": {
          "200": {
            "description": "The list in force afterwards.",
            "content": {"application/json": {"schema": {
              "type": "object",
              "required": ["serial", "adopted", "revoked"],
              "properties": {
                "serial": {"type": "integer"},
                "adopted": {"type": "boolean", "description": "Whether this list replaced the one in force."},
                "revoked": {"type": "array", "items": {"type": "string"}, "description": "The revoked peers' ids, sorted."}
              },
              "additionalProperties": false
            }}}
          },
          "400": {"$ref": "#/components/responses/BadRequest"},
          "401": {"$ref": "#/components/responses/Unauthorized"},
          "403": {"$ref": "#/components/responses/Forbidden"},
          "409": {
            "description": "This agent's mesh is joined by a shared secret: revocation lists are for a mesh of certificates.",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
          },
          "413": {"$ref": "#/components/responses/ContentTooLarge"},
          "415": {"$ref": "#/components/responses/UnsupportedMediaType"},
          "421": {"$ref": "#/components/responses/Misdirected"}
        }
      }
    }
  },
  "components": {
    "securitySchemes": {
      "bearerAuth": {
        "type": "http",
        "scheme": "bearer",
        "description": "The agent's API token: 64 hex digits, in DATA/api-token."
      }
    },
    "responses": {
      "BadRequest": {
        "description": "The request is malformed: a body that is not a JSON object, a missing field or one of the wrong type, a parameter missing, DQL that does not parse or fails.",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
      },
      "Unauthorized": {
        "description": "No token, or not this agent's. The message says where the token is.",
        "headers": {"WWW-Authenticate": {"schema": {"type": "string", "const": "Bearer realm=\"arcus\""}}},
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
      },
      "Forbidden": {
        "description": "The request comes from a web page of another origin (Origin, Sec-Fetch-Site).",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
      },
      "NotFound": {
        "description": "No such subscription, or no document in this store references the attachment.",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
      },
      "ContentTooLarge": {
        "description": "The body exceeds 1 MiB (256 MiB for an attachment).",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
      },
      "UnsupportedMediaType": {
        "description": "A JSON body not sent as application/json (charset, if any, utf-8); an attachment sent as text/plain, a form or with no type.",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
      },
      "Misdirected": {
        "description": "The Host header does not name this agent (a loopback name, or the address it was exposed on), or there is not exactly one.",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
      },
      "AgentFailure": {
        "description": "The agent failed to store or read the attachment.",
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
      }
    },
    "schemas": {
      "Error": {
        "type": "object",
        "required": ["error"],
        "properties": {"error": {"type": "string", "description": "What went wrong, for a person to act on."}},
        "additionalProperties": false
      },
      "Arguments": {
        "type": "object",
        "description": "A statement's arguments by name, such as {\"color\": \"blue\"}.",
        "additionalProperties": true
      },
      "ExecuteRequest": {
        "type": "object",
        "required": ["statement"],
        "properties": {
          "statement": {"type": "string", "minLength": 1, "description": "One DQL statement."},
          "args": {"oneOf": [{"$ref": "#/components/schemas/Arguments"}, {"type": "null"}]},
          "wait_synced": {
            "oneOf": [{"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 64}, {"type": "null"}],
            "description": "Peers (ids, 32 hex digits; sites, 16; or the names they announce) that must hold the write before the answer: 1 to 64 of them."
          },
          "timeout": {
            "oneOf": [{"type": "number", "exclusiveMinimum": 0, "maximum": 3600}, {"type": "null"}],
            "description": "With wait_synced: how long to wait, in seconds (more than 0, at most 3600; default 30). Only with wait_synced."
          }
        },
        "dependentRequired": {"timeout": ["wait_synced"]},
        "additionalProperties": false
      },
      "QueryResult": {
        "type": "object",
        "required": ["items", "mutatedDocumentIDs"],
        "properties": {
          "items": {"type": "array", "items": true, "description": "The documents or projections the statement selected."},
          "mutatedDocumentIDs": {"type": "array", "items": true, "description": "The _ids of the documents it changed."},
          "commit_id": {"type": "integer", "description": "After a statement that changed something: the change-log position of its last change."},
          "synced": {"type": "array", "items": {"type": "string"}, "description": "With wait_synced: the peers, as named, that hold the write."}
        },
        "additionalProperties": false
      },
      "Unsynced": {
        "type": "object",
        "required": ["items", "mutatedDocumentIDs", "error", "unsynced"],
        "properties": {
          "items": {"type": "array", "items": true},
          "mutatedDocumentIDs": {"type": "array", "items": true},
          "commit_id": {"type": "integer"},
          "error": {"type": "string", "description": "Each peer that does not hold the write, and why."},
          "unsynced": {"type": "array", "items": {"type": "string"}}
        },
        "additionalProperties": false
      },
      "SubscribeRequest": {
        "type": "object",
        "required": ["query"],
        "properties": {
          "query": {"type": "string", "description": "A SELECT; \"\" subscribes to the whole store."},
          "args": {"oneOf": [{"$ref": "#/components/schemas/Arguments"}, {"type": "null"}]}
        },
        "additionalProperties": false
      },
      "SubscriptionCreated": {
        "type": "object",
        "required": ["id", "query"],
        "properties": {
          "id": {"type": "integer", "minimum": 0},
          "query": {"type": "string"},
          "args": {"$ref": "#/components/schemas/Arguments"}
        },
        "additionalProperties": false
      },
      "Subscription": {
        "type": "object",
        "required": ["id", "query", "caught_up", "sync"],
        "properties": {
          "id": {"type": "integer", "minimum": 0},
          "query": {"type": "string"},
          "args": {"$ref": "#/components/schemas/Arguments"},
          "caught_up": {"type": "boolean", "description": "Every connected peer is caught up (false with no peer)."},
          "sync": {"type": "array", "items": {"$ref": "#/components/schemas/SyncProgress"}}
        },
        "additionalProperties": false
      },
      "SyncProgress": {
        "type": "object",
        "required": ["peer", "site", "label", "caught_up", "documents_received", "bytes_received", "documents_to_go", "bytes_to_go", "fraction", "started_at"],
        "properties": {
          "peer": {"type": "string", "description": "The peer's id, as /v1/peers shows it (its site, when this agent's presence graph does not know the peer)."},
          "site": {"type": "string", "description": "The peer's site: the first 16 hex digits of its id, as sync logs name it."},
          "label": {"type": "string"},
          "caught_up": {"type": "boolean"},
          "documents_received": {"type": "integer"},
          "bytes_received": {"type": "integer"},
          "documents_to_go": {"type": ["integer", "null"]},
          "bytes_to_go": {"type": ["integer", "null"]},
          "fraction": {"type": ["number", "null"]},
          "started_at": {"type": "number", "description": "Seconds since 1970."}
        },
        "additionalProperties": false
      },
      "Peers": {
        "type": "object",
        "required": ["self", "version", "peers", "links", "admission"],
        "properties": {
          "self": {"type": "string", "description": "This agent's peer id."},
          "version": {"type": "integer"},
          "peers": {"type": "array", "items": {"$ref": "#/components/schemas/Peer"}},
          "links": {"type": "array", "items": {"$ref": "#/components/schemas/Link"}},
          "admission": {"type": "array", "items": {"$ref": "#/components/schemas/AdmissionDecision"}}
        },
        "additionalProperties": true
      },
      "Peer": {
        "type": "object",
        "required": ["id", "name", "self", "metadata"],
        "properties": {
          "id": {"type": "string"},
          "name": {"type": ["string", "null"]},
          "self": {"type": "boolean"},
          "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
          "hops": {"type": "integer"},
          "next_hop": {"type": "string"}
        },
        "additionalProperties": true
      },
      "Link": {
        "type": "object",
        "required": ["a", "b", "transport", "active", "rtt_ms", "throughput"],
        "properties": {
          "a": {"type": "string"},
          "b": {"type": "string"},
          "transport": {"type": "string"},
          "active": {"type": "boolean"},
          "rtt_ms": {"type": ["integer", "null"]},
          "throughput": {"type": ["integer", "null"], "description": "Bytes per second."}
        },
        "additionalProperties": true
      },
      "AdmissionDecision": {
        "type": "object",
        "required": ["peer", "name", "admitted", "by", "reason", "transport", "at"],
        "properties": {
          "peer": {"type": "string"},
          "name": {"type": ["string", "null"]},
          "admitted": {"type": "boolean"},
          "by": {"type": "string"},
          "reason": {"type": ["string", "null"]},
          "transport": {"type": "string"},
          "at": {"type": "number", "description": "Seconds since 1970."}
        },
        "additionalProperties": true
      },
      "AttachmentFetch": {
        "type": "object",
        "required": ["hash", "state", "bytes_fetched", "total_bytes", "source"],
        "properties": {
          "hash": {"type": "string"},
          "state": {"type": "string", "enum": ["waiting", "fetching", "relaying"]},
          "bytes_fetched": {"type": "integer"},
          "total_bytes": {"type": ["integer", "null"]},
          "source": {"type": ["string", "null"], "description": "The peer sending it, while fetching."}
        },
        "additionalProperties": false
      },
      "AttachmentStored": {
        "type": "object",
        "required": ["_attachment", "len", "metadata", "collection", "id", "field"],
        "properties": {
          "_attachment": {"type": "string", "description": "The blob's SHA-256, 64 hex digits."},
          "len": {"type": "integer"},
          "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
          "collection": {"type": "string"},
          "id": {"type": "string"},
          "field": {"type": "string"}
        },
        "additionalProperties": false
      },
      "Status": {
        "type": "object",
        "required": ["name", "peer", "data", "durability", "transports", "transports_failed", "uptime_seconds", "store", "sync", "subscriptions", "attachments", "bluetooth_signal", "graph"],
        "properties": {
          "name": {"type": "string"},
          "peer": {"type": "string"},
          "data": {"type": "string", "description": "The data directory."},
          "durability": {"type": "string", "description": "full or normal."},
          "transports": {"type": "array", "items": {"type": "string"}},
          "transports_failed": {"type": "object", "additionalProperties": {"type": "string"}},
          "uptime_seconds": {"type": "number"},
          "store": {
            "type": "object",
            "required": ["bytes"],
            "properties": {
              "bytes": {"type": "integer"},
              "documents": {"type": "integer"},
              "collections": {"type": "array", "items": {
                "type": "object",
                "required": ["name", "documents"],
                "properties": {"name": {"type": "string"}, "documents": {"type": "integer"}}
              }},
              "error": {"type": "string", "description": "Instead of documents and collections, when they cannot be counted."}
            },
            "additionalProperties": true
          },
          "sync": {
            "type": "object",
            "required": ["sessions", "lag_seconds", "bytes_sent", "bytes_received", "frames_sent", "frames_received"],
            "properties": {
              "sessions": {"type": "integer"},
              "lag_seconds": {"type": "number"},
              "bytes_sent": {"type": "integer"},
              "bytes_received": {"type": "integer"},
              "frames_sent": {"type": "integer"},
              "frames_received": {"type": "integer"}
            },
            "additionalProperties": true
          },
          "subscriptions": {"type": "array", "items": {"$ref": "#/components/schemas/Subscription"}},
          "attachments": {"type": "array", "items": {"$ref": "#/components/schemas/AttachmentFetch"}},
          "bluetooth_signal": {"type": "array", "items": {
            "type": "object",
            "required": ["peer", "rssi_dbm"],
            "properties": {"peer": {"type": "string"}, "rssi_dbm": {"type": "integer"}}
          }},
          "graph": {"$ref": "#/components/schemas/Peers"}
        },
        "additionalProperties": true
      }
    }
  }
}
"""#
}
