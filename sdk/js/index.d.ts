/** How a datagram is framed: the 8-byte header, or the original game's 17. */
export type Framing = 'compact' | 'legacy';
export type RoomState = 'waiting' | 'countdown' | 'playing' | 'finished';
/** Why a lobby refused; a seed lobby never says ('unspecified'). */
export type Reason = 'unspecified' | 'not_found' | 'full' | 'started' | 'wrong_password'
  | 'quota' | 'rate_limited' | 'no_capacity' | 'draining' | 'denied';
export type MessageTypeName = 'LIST_ROOMS' | 'ROOM_LIST' | 'CREATE_ROOM' | 'ROOM_CREATED'
  | 'JOIN_ROOM' | 'JOIN_SUCCESS' | 'JOIN_FAILED';

export const DEFAULT_TIMEOUT: number;
export const DEFAULT_ATTEMPTS: number;
export const MAX_ROOMS: number;
export const MessageType: Readonly<Record<MessageTypeName, number>>;
export const ROOM_STATES: readonly RoomState[];
export const REASONS: readonly Reason[];

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
}

/** A place the lobby holds for this client: send the game traffic to address:port. */
export interface Seat {
  room: number;
  address: string;
  port: number;
  /** A seat token and its expiry come with the extension; null from a seed lobby. */
  token: Uint8Array | null;
  expires: Date | null;
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
  list(filter?: Filter): Promise<Room[]>;
  create(options?: CreateOptions): Promise<Seat>;
  /** Joins a room by id (a code, a string, needs the extension). */
  join(room: number | string, options?: { password?: string }): Promise<Seat>;
  quickJoin(filter?: Filter): Promise<Seat>;
  close(): void;
}

export function crc32(b: Uint8Array): number;
export function encodeRequest(type: number, seq: number,
  options?: { framing?: Framing; tick?: number; room?: number }): Buffer;
export function decode(b: Uint8Array): Message;
export function lz4Decompress(src: Uint8Array, size: number): Buffer;
