import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import type { DescEnum, DescExtension, DescFile, DescMessage, DescService, MessageInitShape } from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema } from "@bufbuild/protobuf/wkt";
import { Code } from "@connectrpc/connect";
import type { ServiceImpl } from "@connectrpc/connect";
import {
  ServerReflection,
  ServerReflectionRequestSchema,
  ServerReflectionResponseSchema,
} from "../gen/grpc/reflection/v1/reflection_pb.js";
import type { ServerReflectionRequest } from "../gen/grpc/reflection/v1/reflection_pb.js";
import {
  ServerReflection as ServerReflectionV1Alpha,
  ServerReflectionRequestSchema as V1AlphaRequestSchema,
  ServerReflectionResponseSchema as V1AlphaResponseSchema,
} from "../gen/grpc/reflection/v1alpha/reflection_pb.js";

export { ServerReflection, ServerReflectionV1Alpha };

type Response = MessageInitShape<typeof ServerReflectionResponseSchema>;

/**
 * What reflection knows: every file the served services need (their own and, transitively,
 * everything they import), by file name, by fully-qualified symbol, and extensions by the type
 * they extend. Built from the descriptors protoc-gen-es embeds in the generated code, so it always
 * describes exactly what the server runs.
 */
class DescriptorIndex {
  readonly files = new Map<string, DescFile>();
  readonly symbols = new Map<string, DescFile>();
  readonly extensions = new Map<string, DescExtension[]>();

  constructor(readonly services: readonly DescService[]) {
    for (const service of services) this.addFile(service.file);
  }

  private addFile(file: DescFile): void {
    // DescFile.name drops ".proto"; reflection speaks of files by their full path.
    if (this.files.has(file.proto.name)) return;
    this.files.set(file.proto.name, file);
    for (const dependency of file.dependencies) this.addFile(dependency);
    for (const service of file.services) {
      this.symbols.set(service.typeName, file);
      for (const method of service.methods) this.symbols.set(`${service.typeName}.${method.name}`, file);
    }
    for (const enumeration of file.enums) this.addEnum(enumeration);
    for (const message of file.messages) this.addMessage(message);
    for (const extension of file.extensions) this.addExtension(extension);
  }

  private addMessage(message: DescMessage): void {
    this.symbols.set(message.typeName, message.file);
    for (const field of message.fields) this.symbols.set(`${message.typeName}.${field.name}`, message.file);
    for (const nested of message.nestedMessages) this.addMessage(nested);
    for (const enumeration of message.nestedEnums) this.addEnum(enumeration);
    for (const extension of message.nestedExtensions) this.addExtension(extension);
  }

  private addEnum(enumeration: DescEnum): void {
    this.symbols.set(enumeration.typeName, enumeration.file);
  }

  private addExtension(extension: DescExtension): void {
    this.symbols.set(extension.typeName, extension.file);
    const extendee = extension.extendee.typeName;
    this.extensions.set(extendee, [...(this.extensions.get(extendee) ?? []), extension]);
  }
}

/**
 * gRPC server reflection (grpc.reflection.v1 and its wire-identical predecessor v1alpha, which
 * grpcurl and older tools still ask for), so `buf curl`, grpcurl and Postman can list and call the
 * services with no .proto files at hand.
 */
export function reflectionServices(services: readonly DescService[]): {
  v1: ServiceImpl<typeof ServerReflection>;
  v1alpha: ServiceImpl<typeof ServerReflectionV1Alpha>;
} {
  const index = new DescriptorIndex([...services, ServerReflection, ServerReflectionV1Alpha]);
  return {
    v1: {
      async *serverReflectionInfo(requests) {
        const sent = new Set<string>();
        for await (const request of requests) yield answer(index, request, sent);
      },
    },
    v1alpha: {
      async *serverReflectionInfo(requests) {
        const sent = new Set<string>();
        for await (const request of requests) {
          const response = create(ServerReflectionResponseSchema, answer(index, fromBinary(ServerReflectionRequestSchema, toBinary(V1AlphaRequestSchema, request)), sent));
          yield fromBinary(V1AlphaResponseSchema, toBinary(ServerReflectionResponseSchema, response));
        }
      },
    },
  };
}

/** `sent`: the files this stream has already sent, which later answers leave out as dependencies (as grpc-go does). */
function answer(index: DescriptorIndex, request: ServerReflectionRequest, sent: Set<string>): Response {
  const base = { validHost: request.host, originalRequest: request };
  const files = (file: DescFile | undefined, what: string): Response =>
    file
      ? { ...base, messageResponse: { case: "fileDescriptorResponse", value: { fileDescriptorProto: withDependencies(file, sent) } } }
      : notFound(base, what);
  const { messageRequest } = request;
  switch (messageRequest.case) {
    case "fileByFilename":
      return files(index.files.get(messageRequest.value), `file "${messageRequest.value}"`);
    case "fileContainingSymbol":
      return files(index.symbols.get(messageRequest.value), `symbol "${messageRequest.value}"`);
    case "fileContainingExtension": {
      const { containingType, extensionNumber } = messageRequest.value;
      const extension = index.extensions.get(containingType)?.find((candidate) => candidate.number === extensionNumber);
      return files(extension?.file, `extension ${extensionNumber} of "${containingType}"`);
    }
    case "allExtensionNumbersOfType": {
      const type = messageRequest.value;
      if (!index.symbols.has(type)) return notFound(base, `type "${type}"`);
      const numbers = (index.extensions.get(type) ?? []).map((extension) => extension.number);
      return { ...base, messageResponse: { case: "allExtensionNumbersResponse", value: { baseTypeName: type, extensionNumber: numbers } } };
    }
    case "listServices":
      return {
        ...base,
        messageResponse: { case: "listServicesResponse", value: { service: index.services.map((service) => ({ name: service.typeName })) } },
      };
    default:
      return { ...base, messageResponse: { case: "errorResponse", value: { errorCode: Code.InvalidArgument, errorMessage: "no request in the message" } } };
  }
}

function notFound(base: Pick<Response, "validHost" | "originalRequest">, what: string): Response {
  return { ...base, messageResponse: { case: "errorResponse", value: { errorCode: Code.NotFound, errorMessage: `${what} not found` } } };
}

/** The file first, always; then its transitive imports this stream has not sent yet. */
function withDependencies(file: DescFile, sent: Set<string>): Uint8Array[] {
  const encoded: Uint8Array[] = [];
  const queue = [file];
  for (let current = queue.shift(); current; current = queue.shift()) {
    if (encoded.length === 0 || !sent.has(current.proto.name)) {
      sent.add(current.proto.name);
      encoded.push(toBinary(FileDescriptorProtoSchema, current.proto));
      queue.push(...current.dependencies);
    }
  }
  return encoded;
}
