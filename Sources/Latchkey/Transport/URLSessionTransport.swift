#if canImport(Darwin)
    public import Foundation
    public import HTTPTypes
    import HTTPTypesFoundation

    /// ``HTTPTransport`` over `URLSession`, for Apple platforms.
    ///
    /// Redirects are never followed, bodies are capped, and each request has its own timeout.
    public final class URLSessionTransport: HTTPTransport {
        private let session: URLSession

        /// Uses an ephemeral session that refuses redirects.
        public init() {
            session = URLSession(
                configuration: .ephemeral, delegate: RedirectRefuser(), delegateQueue: nil)
        }

        public func send(_ request: HTTPRequest, body: Data?, options: HTTPTransportOptions)
            async throws(TransportError)
            -> HTTPTransportResponse
        {
            guard var urlRequest = URLRequest(httpRequest: request) else {
                throw TransportError(.invalidURL, "The request has no URL.")
            }
            urlRequest.httpBody = body
            urlRequest.timeoutInterval =
                Double(options.timeout.components.seconds) + Double(options.timeout.components.attoseconds) / 1e18
            do {
                let (bytes, response) = try await session.bytes(for: urlRequest)
                guard let httpResponse = (response as? HTTPURLResponse)?.httpResponse else {
                    throw TransportError(.connectionFailed, "The answer is not HTTP.")
                }
                var data = Data()
                for try await byte in bytes {
                    data.append(byte)
                    if data.count > options.maximumBodySize {
                        throw TransportError(
                            .bodyTooLarge, "The response body is larger than \(options.maximumBodySize) bytes.")
                    }
                }
                return HTTPTransportResponse(response: httpResponse, body: data)
            } catch let error as TransportError {
                throw error
            } catch let error as URLError where error.code == .timedOut {
                throw TransportError(.timedOut, "No answer in time.", underlying: error)
            } catch let error as URLError where error.code == .cancelled {
                throw TransportError(.cancelled, "The request was cancelled.", underlying: error)
            } catch {
                throw TransportError(.connectionFailed, "The connection failed.")
            }
        }
    }

    /// Answers every redirect with "do not follow".
    private final class RedirectRefuser: NSObject, URLSessionTaskDelegate, Sendable {
        func urlSession(
            _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
            newRequest request: URLRequest
        ) async -> URLRequest? {
            nil
        }
    }
#endif
