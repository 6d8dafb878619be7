// The two headers of the contract. Header names are case-insensitive; gRPC metadata and HTTP/2
// carry them in lower case, so they are written that way here.

/** The API key (the interface's SERVICE_API_KEY): HTTP header and gRPC metadata. */
export const API_KEY_HEADER = "service_api_key";

/** The request id: taken from the caller when acceptable, returned on every response, written in every log line. */
export const REQUEST_ID_HEADER = "x-request-id";
