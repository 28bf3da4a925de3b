import ArcusCRDT
import Hummingbird
import NIOCore

/// An error the HTTP API answers with: a 4xx (or, for the agent's own failures, 5xx) status and
/// `{"error": "…"}`, a message a person can act on.
struct APIError: Error {
    let status: HTTPResponse.Status
    let message: String
    /// Headers the answer carries besides its content type (`WWW-Authenticate` with a 401).
    let headers: HTTPFields

    init(_ status: HTTPResponse.Status, _ message: String, headers: HTTPFields = [:]) {
        self.status = status
        self.message = message
        self.headers = headers
    }

    var response: Response {
        var response = JSONResponse.make(Value.object(["error": .string(message)]).jsonString, status: status)
        response.headers.append(contentsOf: headers)
        return response
    }
}

enum JSONResponse {
    static func make(_ json: String, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status,
            headers: [.contentType: "application/json; charset=utf-8"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: json + "\n"))
        )
    }
}

/// Turns every error a route throws, and the router's own (no such route, wrong method), into
/// a JSON error response, so that clients read one shape whatever went wrong.
struct JSONErrorMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as APIError {
            return error.response
        } catch let error as HTTPError where error.status == .notFound && !AgentHTTPAPI.methods(at: request.uri.path).isEmpty {
            // The path is a route's, the method is not: say which methods it takes (RFC 9110 15.5.6).
            let allowed = AgentHTTPAPI.methods(at: request.uri.path)
            return APIError(
                .methodNotAllowed, "\(request.uri.path) takes \(allowed.joined(separator: " or ")), not \(request.method); the routes are listed in Docs/Agent.md",
                headers: [.allow: allowed.joined(separator: ", ")]
            ).response
        } catch let error as HTTPError {
            let message = error.status == .notFound
                ? "no route \(request.method) \(request.uri.path); the routes are listed in Docs/Agent.md"
                : (error.body ?? error.status.reasonPhrase)
            return APIError(error.status, message).response
        } catch {
            context.logger.error("request failed", metadata: ["path": "\(request.uri.path)", "error": "\(error)"])
            return APIError(.internalServerError, "the agent failed to answer: \(error)").response
        }
    }
}
