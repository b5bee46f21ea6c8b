/** How a datagram is framed: the 8-byte header, or the original game's 17. */
export type Framing = 'compact' | 'legacy';
export type RoomState = 'waiting' | 'countdown' | 'playing' | 'finished';
/** Why a lobby refused; a seed lobby never says ('unspecified'). */
export type Reason = 'unspecified' | 'not_found' | 'full' | 'started' | 'wrong_password'
  | 'quota' | 'rate_limited' | 'no_capacity' | 'draining' | 'denied';
export type MessageTypeName = 'LIST_ROOMS' | 'ROOM_LIST' | 'CREATE_ROOM' | 'ROOM_CREATED'
  | 'JOIN_ROOM' | 'JOIN_SUCCESS' | 'JOIN_FAILED' | 'EXT_LIST' | 'EXT_ROOMS' | 'EXT_CREATE' | 'EXT_SEAT'
  | 'EXT_JOIN' | 'EXT_REFUSED' | 'EXT_QUICK' | 'EXT_RETRY' | 'EXT_PRESENT' | 'EXT_ADMITTED';

export const DEFAULT_TIMEOUT: number;
export const DEFAULT_ATTEMPTS: number;
export const MAX_ROOMS: number;
export const MessageType: Readonly<Record<MessageTypeName, number>>;
export const ROOM_STATES: readonly RoomState[];
export const REASONS: readonly Reason[];
/** A request without a retry token is padded to this many bytes. */
export const PAD_TO: number;
/** The letters of join codes. */
export const CODE_ALPHABET: string;

export interface Room {
  id: number;
  players: number;
  maxPlayers: number;
  port: number;
  state: RoomState;
  /** Carried by Foyer's protocol extension; empty from a seed lobby. */
  name: string;
  mode: string;
  map: string;
  tags: Record<string, string>;
  /** Its join code, and whether it wants a password (the extension's). */
  code?: string;
  password?: boolean;
}

/** A place the lobby holds for this client: send the game traffic to address:port. */
export interface Seat {
  room: number;
  address: string;
  port: number;
  /** A seat token and its expiry come with the extension; null from a seed lobby. */
  token: Uint8Array | null;
  expires: Date | null;
  /** The room's join code; '' from a seed lobby. */
  code: string;
}

/** Which rooms list and quickJoin want. A seed lobby filters by state and freeSeats only. */
export interface Filter {
  state?: RoomState;
  freeSeats?: number;
  mode?: string;
  map?: string;
  namePrefix?: string;
  tags?: Record<string, string>;
}

/** What a new room is to be; a seed lobby takes none of it. */
export interface CreateOptions {
  name?: string;
  mode?: string;
  map?: string;
  tags?: Record<string, string>;
  private?: boolean;
  password?: string;
}

export interface ClientOptions {
  /** How long one attempt waits for its reply, in ms (default 5000). */
  timeout?: number;
  /** How many times a request is sent (default 3), always with the same sequence id. */
  attempts?: number;
  /** The header requests are written in (default 'compact'); replies are read in either. */
  framing?: Framing;
}

export interface Message {
  framing: Framing;
  type: MessageTypeName;
  seq: number;
  tick: number;
  compressed: boolean;
  room: number;
  port: number;
  rooms: Room[];
  /** The extension's replies: EXT_RETRY's token; EXT_SEAT's code, address ('' for the lobby's) and seat token;
   * EXT_ROOMS' cursor of the next page; EXT_REFUSED's reason; EXT_ADMITTED's room (in room). */
  token?: Uint8Array | null;
  code?: string;
  address?: string;
  seatToken?: Uint8Array | null;
  next?: number;
  reason?: Reason;
}

/** An extension request, as encodeExt writes it. */
export interface ExtRequest {
  type: 'EXT_LIST' | 'EXT_CREATE' | 'EXT_JOIN' | 'EXT_QUICK' | 'EXT_PRESENT' | number;
  seq: number;
  framing?: Framing;
  tick?: number;
  /** The lobby's retry token, echoed; null for none. */
  token?: Uint8Array | null;
  /** Zero bytes the request ends with. */
  pad?: number;
  /** The client's own 8-byte id, which its seat token binds. */
  client?: Uint8Array;
  filter?: Filter;
  cursor?: number;
  limit?: number;
  options?: CreateOptions;
  password?: string;
  room?: number;
  code?: string;
  /** EXT_PRESENT: the seat's token. */
  seatToken?: Uint8Array;
}

export class FoyerError extends Error {}
export class TimeoutError extends FoyerError {}
export class RefusedError extends FoyerError {
  readonly reason: Reason;
}
export class UnreachableError extends FoyerError {}
export class NotSupportedError extends FoyerError {}
export class ClosedError extends FoyerError {}
export class MalformedPacketError extends FoyerError {
  /** The protocol's label of the rule the datagram breaks, such as 'crc'. */
  readonly reason: string;
}

export class Client {
  /** Resolves the lobby's address ("host:port") and opens a socket to it. */
  static connect(lobby: string, options?: ClientOptions): Promise<Client>;
  /** The lobby's name as given, and the IP its seats are at. */
  readonly lobby: string;
  readonly address: string;
  /** Every room filter matches, page after page. */
  list(filter?: Filter): Promise<Room[]>;
  /** One page of rooms after cursor, and the next page's cursor (0 after the last); needs the extension. */
  page(filter?: Filter, cursor?: number, limit?: number): Promise<{ rooms: Room[]; next: number }>;
  create(options?: CreateOptions): Promise<Seat>;
  /** Joins a room by id, or by code (a string, any case), with its password if it has one. */
  join(room: number | string, options?: { password?: string }): Promise<Seat>;
  /** A seat in the fullest joinable room filter matches, or in a new one. */
  quickJoin(filter?: Filter): Promise<Seat>;
  close(): void;
}

export function crc32(b: Uint8Array): number;
export function encodeRequest(type: number, seq: number,
  options?: { framing?: Framing; tick?: number; room?: number }): Buffer;
/** The datagram of an extension request; a RangeError for a field out of its range. */
export function encodeExt(m: ExtRequest): Buffer;
export function decode(b: Uint8Array): Message;
export function lz4Decompress(src: Uint8Array, size: number): Buffer;
/** Shows seat's token to its room from socket (connected to the room, or not: then sent to seat's address, admitted only from it) until EXT_ADMITTED; TimeoutError else. */
export function present(socket: import('node:dgram').Socket, seat: Seat,
  options?: { timeout?: number; attempts?: number }): Promise<void>;
