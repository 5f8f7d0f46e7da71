import { Body, Controller, Delete, Get, HttpCode, Post, Req, Res } from '@nestjs/common';
import { ApiCookieAuth, ApiCreatedResponse, ApiHeader, ApiNoContentResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import type { FastifyReply } from 'fastify';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { type Caller, CurrentCaller, PublicRoute } from '../auth/auth.decorators.js';
import { ApiErrorResponses, SESSION_SCHEME } from '../http/openapi.js';
import { SessionDto, SignInDto } from './dto/sessions.dto.js';
import { clearedSessionCookie, sessionCookie } from './session-cookie.js';
import { type CredentialRequest, CSRF_HEADER, SessionCredential } from './session-credential.js';
import { type ConsoleSession, SessionsService } from './sessions.service.js';

/**
 * Sign-in and sign-out of the operator console: a member's API key is exchanged for a
 * session cookie (`tp_session`, HttpOnly, SameSite=Strict), which every route then accepts in
 * place of `Authorization: Bearer`.
 */
@ApiTags('sessions')
@Controller('sessions')
export class SessionsController {
  constructor(
    private readonly sessions: SessionsService,
    private readonly credential: SessionCredential,
  ) {}

  @Post()
  @PublicRoute()
  @ApiOperation({
    summary: 'Signs in with your API key: sets the session cookie and answers the session with its CSRF token',
    description:
      'Checks `api_key` as a bearer request would (unknown or revoked: 401 `unauthorized`; its member left: 403 `forbidden`), then sets `tp_session` ' +
      '(HttpOnly, SameSite=Strict, Path=/, Max-Age = CONSOLE_SESSION_TTL_S; Secure over https). An `Origin` header of another origin answers 403 `forbidden` with `{reason: "csrf"}`.',
  })
  @ApiCreatedResponse({ type: SessionDto, headers: { 'Set-Cookie': { description: '`tp_session=<token>; HttpOnly; SameSite=Strict; Path=/; Max-Age=<s>`', schema: { type: 'string' } } } })
  @ApiErrorResponses(400, 401, 403, 413, 415)
  async signIn(@Body() body: SignInDto, @Req() request: CredentialRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<SessionDto> {
    this.credential.assertOwnOrigin(request);
    const { view, token, maxAgeS } = await this.sessions.signIn(body.api_key);
    reply.header('set-cookie', sessionCookie(token, maxAgeS, this.credential.secureCookie(request)));
    return view;
  }

  @Get('current')
  @ApiCookieAuth(SESSION_SCHEME)
  @ApiOperation({ summary: 'The signed-in session, with its CSRF token (for a reloaded page)', description: 'Needs the session cookie; with a bearer key it answers 401.' })
  @ApiOkResponse({ type: SessionDto })
  @ApiErrorResponses(401, 403)
  current(@CurrentCaller() caller: Caller, @Req() request: CredentialRequest): SessionDto {
    return this.sessions.view(sessionOf(request), caller);
  }

  @Delete('current')
  @HttpCode(204)
  @ApiCookieAuth(SESSION_SCHEME)
  @ApiHeader({ name: CSRF_HEADER, required: true, description: "The session's `csrf_token`" })
  @ApiOperation({ summary: 'Signs out: ends the session at once and clears the cookie', description: 'Needs the session cookie and the CSRF header; the session cannot be used again, even by a copy of the cookie.' })
  @ApiNoContentResponse({ description: 'Signed out; `Set-Cookie` clears `tp_session`' })
  @ApiErrorResponses(401, 403)
  async signOut(@Req() request: CredentialRequest, @Res({ passthrough: true }) reply: FastifyReply): Promise<void> {
    await this.sessions.signOut(sessionOf(request));
    reply.header('set-cookie', clearedSessionCookie(this.credential.secureCookie(request)));
  }
}

/** The session the guard resolved, or 401 when the request came with a bearer key instead. */
function sessionOf(request: CredentialRequest): ConsoleSession {
  if (!request.consoleSession) throw new AppError(ErrorCode.Unauthorized, 'this route needs the console session cookie (POST /sessions), not an API key');
  return request.consoleSession;
}
