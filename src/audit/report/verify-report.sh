#!/usr/bin/env bash
# Verify an unlearn-audit signed report with bash, printf, base64, sha256sum and openssl (>= 3.0).
# Usage, from an empty scratch directory:  DIR=path/to/report PUB=path/to/public.pem bash verify-report.sh
# PUB must be the signer's public key obtained out of band (never a key shipped with the report).
# An envelope and subjects this script accepts, `audit verify` accepts too (it reads the signed
# claims too; this script checks only the statement's type and subjects). It refuses some unusual
# but valid input that `audit verify` reads: JSON escapes other than \/, nested unknown fields,
# a statement not in the RFC 8785 form the toolkit signs; check those with `audit verify`.
# Like `audit verify`, it refuses any file or directory in DIR the signature does not cover (an
# added methods/<name>/, a page rendered after signing, a hidden file), deletion-commitment.salt aside.
set -eu
export LC_ALL=C
DIR=${DIR:?set DIR to the report directory}
PUB=${PUB:?set PUB to the signer public key PEM}
TYPE='application/vnd.in-toto+json'
fail() { echo "FAIL: $*" >&2; exit 1; }
unusual() {  # valid JSON that only audit verify reads
  fail "$1 is not in the form the toolkit writes, the only one this script reads; use audit verify"
}

# 1. Read the envelope: any layout (indented or minified), fields in any order, one or more signatures.
[ -f "$DIR/report.dsse.json" ] || fail "report.dsse.json is missing from $DIR"
! IFS= read -r -d '' _ < "$DIR/report.dsse.json" || fail "the envelope holds a NUL byte"
exec 3< "$DIR/report.dsse.json"
ascii=$'\t\n\r'' -~' size=0 seg='' quote=''
piece() {  # the envelope up to its next '"' (status 1 at its end); read in pieces so that time stays linear
  local status=0
  IFS= read -r -d '"' -u 3 piece || status=1
  size=$((size + ${#piece} + 1))
  [ "$size" -le 16777217 ] || fail "the envelope is larger than 16 MiB"
  case $piece in *[!$ascii]*) fail "the envelope holds bytes other than printable ASCII" ;; esac
  return $status
}
next() {  # the next JSON token: tok is { } [ ] : , or " (str holds the string) or a literal; '' at the end
  seg=${seg#"${seg%%[! $'\t\n\r']*}"}
  case $seg in
    '') tok=''
        [ -n "$quote" ] || return 0
        piece || fail "the envelope is not valid JSON (an unterminated string)"
        str=${piece//'\/'//} tok='"'   # \/ is the one escape base64 can need; any other is refused
        case $str in *\\*) unusual "a string with a JSON escape" ;;
          *[$'\t\n\r']*) fail "the envelope is not valid JSON (a control character in a string)" ;; esac
        if piece; then quote=1; else quote=''; fi
        seg=$piece
        [ "${#seg}" -le 65536 ] || unusual "the envelope's layout" ;;
    [][{}:,]*) tok=${seg:0:1} seg=${seg:1} ;;
    [-0-9tfn]*) tok=${seg%%[!-+.0-9A-Za-z]*} seg=${seg:${#tok}}
          [[ $tok =~ ^(true|false|null|-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?)$ ]] ||
            fail "the envelope is not valid JSON (the token '${tok:0:20}')"
          [ "${#tok}" -le 64 ] || fail "the envelope holds a number too long to read" ;;
    *) fail "the envelope is not valid JSON (an unexpected character)" ;;
  esac
}
if piece; then quote=1; fi
seg=$piece
[ "${#seg}" -le 65536 ] || unusual "the envelope's layout"
scalar() {  # the value of a field this script does not use: a string, a number, true, false or null
  case $tok in '{'|'[') unusual "a nested unknown field" ;;
               :|,|'}'|']') fail "the envelope is not valid JSON (a value is missing)" ;; esac
}
b64() {  # standard base64, padded, as audit verify requires
  local v=$1
  case $v in *==) v=${v:0:${#v}-2} ;; *=) v=${v:0:${#v}-1} ;; esac   # (not ${v%=}: slow on megabytes)
  [ $(( ${#1} % 4 )) -eq 0 ] || fail "the envelope's $2 is not valid standard base64"
  case $v in *[!A-Za-z0-9+/]*) fail "the envelope's $2 is not valid standard base64" ;; esac
}
nl=$'\n' keys=$nl payload='' ptype='' sigs=() keyids=$nl
next; [ "$tok" = '{' ] || fail "the envelope is not a JSON object"
next
while [ "$tok" != '}' ]; do
  [ "$tok" = '"' ] || fail "the envelope is not valid JSON (a key is not a string)"
  key=$str
  case $keys in *"$nl$key$nl"*) fail "the envelope repeats the key '$key'" ;; esac; keys+=$key$nl
  next; [ "$tok" = : ] || fail "the envelope is not valid JSON (a ':' is missing)"
  next
  case $key in
    payload|payloadType)
      [ "$tok" = '"' ] || fail "the envelope's $key is not a string"
      if [ "$key" = payload ]; then payload=$str; else ptype=$str; fi ;;
    signatures)
      [ "$tok" = '[' ] || fail "the envelope's signatures are not a list"
      next
      while [ "$tok" != ']' ]; do
        [ "$tok" = '{' ] || fail "the envelope has a signature entry that is not an object"
        skeys=$nl sig='' kid=''; next
        while [ "$tok" != '}' ]; do
          [ "$tok" = '"' ] || fail "the envelope is not valid JSON (a key is not a string)"
          key=$str
          case $skeys in *"$nl$key$nl"*) fail "the envelope repeats the key '$key'" ;; esac; skeys+=$key$nl
          next; [ "$tok" = : ] || fail "the envelope is not valid JSON (a ':' is missing)"
          next
          case $key in
            sig|keyid) [ "$tok" = '"' ] || fail "the envelope has a signature whose $key is not a string"
                       if [ "$key" = sig ]; then sig=$str; else kid=$str; fi ;;
            *) scalar ;;
          esac
          next
          case $tok in
            ,) next; [ "$tok" != '}' ] || fail "the envelope is not valid JSON (a trailing comma)" ;;
            '}') ;; *) fail "the envelope is not valid JSON (a ',' is missing)" ;; esac
        done
        case $skeys in *"${nl}sig$nl"*) ;; *) fail "the envelope has a signature without a 'sig'" ;; esac
        case $keyids in *"$nl$kid$nl"*) fail "the envelope has two signatures with the keyid '$kid'" ;; esac
        keyids+=$kid$nl
        b64 "$sig" signature
        sigs+=("$sig")
        next
        case $tok in ,) next; [ "$tok" != ']' ] || fail "the envelope is not valid JSON (a trailing comma)" ;;
                     ']') ;; *) fail "the envelope is not valid JSON (a ',' is missing)" ;; esac
      done ;;
    *) scalar ;;
  esac
  next
  case $tok in ,) next; [ "$tok" != '}' ] || fail "the envelope is not valid JSON (a trailing comma)" ;;
               '}') ;; *) fail "the envelope is not valid JSON (a ',' is missing)" ;; esac
done
next; [ -z "$tok" ] || fail "the envelope is not valid JSON (text after the object)"
case $keys in *"${nl}payload$nl"*) ;; *) fail "the envelope has no payload" ;; esac
case $keys in *"${nl}payloadType$nl"*) ;; *) fail "the envelope has no payloadType" ;; esac
[ "${#sigs[@]}" -gt 0 ] || fail "the envelope has no signatures"
[ "$ptype" = "$TYPE" ] || fail "payloadType is '$ptype', not $TYPE"
b64 "$payload" payload

# 2. Rebuild the DSSE pre-authentication encoding from the exact payload bytes.
len=$(( ${#payload} / 4 * 3 ))
case $payload in *==) len=$((len - 2)) ;; *=) len=$((len - 1)) ;; esac
printf 'DSSEv1 %d %s %d ' "${#TYPE}" "$TYPE" "$len" > pae.bin
printf '%s' "$payload" | base64 -d >> pae.bin

# 3. Check the Ed25519 signatures: the report verifies if one of them is by PUB (keyids are unsigned hints).
ok=''
for s in "${sigs[@]}"; do
  printf '%s' "$s" | base64 -d > sig.bin
  if out=$(openssl pkeyutl -verify -pubin -inkey "$PUB" -rawin -in pae.bin -sigfile sig.bin 2>&1); then
    echo "$out"; ok=1; break
  fi
done
[ -n "$ok" ] || { echo "$out" >&2; fail "no signature in the envelope verifies with $PUB"; }

# 4. Read the signed statement: the RFC 8785 form the toolkit signs, subjects last.
printf '%s' "$payload" | base64 -d > statement.json
stmt=$(< statement.json)
[ "${#stmt}" -eq "$len" ] || unusual "the signed statement"
case $stmt in '{"_type":"https://in-toto.io/Statement/v1","predicate":{'*) ;;
  *) fail "the signed payload is not an in-toto Statement v1 in the form the toolkit writes" ;; esac
for claims in audit-claims comparison-claims; do  # one audit's report, or a comparison (audit compare)
  tailpat='"predicateType":"https://unlearn-audit.dev/'$claims'/v1","subject":['
  rest=${stmt##*"$tailpat"}
  [ "$rest" = "$stmt" ] || break
done
[ "$rest" != "$stmt" ] || fail "the signed statement is not of an unlearn-audit predicate type"
before=${stmt:0:${#stmt}-${#rest}-${#tailpat}}
case $before in *'},') ;; *) unusual "the signed statement" ;; esac
case $rest in *']}') rest=${rest%']}'} ;; *) unusual "the signed statement" ;; esac

# 5. Recompute the SHA-256 of every signed file (inside DIR, as audit verify requires) and compare.
real=$(CDPATH= cd -P -- "$DIR" && pwd -P)
inside() {  # does DIR/$1 resolve, through any symlinks, to a file inside DIR?
  local p=$DIR part rest=$1/ link='' f
  while [ -n "$rest" ]; do part=${rest%%/*} rest=${rest#*/} p+=/$part; [ ! -L "$p" ] || link=1; done
  [ -n "$link" ] || return 0
  # bash cannot read a symlink, but it can compare inodes (-ef) with the files DIR holds.
  shopt -s globstar dotglob nullglob
  for f in "$real"/**; do
    if [ ! -L "$f" ] && [ -f "$f" ] && [ "$f" -ef "$DIR/$1" ]; then return 0; fi
  done
  return 1
}
n=0 names=$nl subjects=()
while [ -n "$rest" ]; do
  case $rest in '{"digest":{"sha256":"'*) ;; *) unusual "the statement's subject list" ;; esac
  rest=${rest#'{"digest":{"sha256":"'} want=${rest%%'"'*} rest=${rest#*'"'}
  case $rest in '},"name":"'*) ;; *) unusual "the statement's subject list" ;; esac
  rest=${rest#'},"name":"'} name=${rest%%'"'*} rest=${rest#*'"'}
  case $rest in '}') rest='' ;; '},{'*) rest=${rest#'},'} ;; *) unusual "the statement's subject list" ;; esac
  [ "${#want}" -eq 64 ] && case $want in *[!0-9a-f]*) false ;; esac ||
    fail "the statement has no valid lowercase hex SHA-256 digest for '$name'"
  case $name in ''|/*|*/|*//*|.|./*|*/.|*/./*|..|../*|*/..|*/../*|report.dsse.json|*[\\:]*|*[[:cntrl:]]*)
    fail "the statement names an unexpected subject '$name'" ;; esac
  case $names in *"$nl$name$nl"*) fail "the statement lists the subject '$name' twice" ;; esac
  names+=$name$nl subjects+=("$name")
  inside "$name" || fail "$name leads outside $DIR through a symlink"
  [ -f "$DIR/$name" ] || fail "$name is missing"
  got=$(sha256sum < "$DIR/$name"); got=${got%% *}
  [ "$got" = "$want" ] || fail "$name was modified (sha256 $got, signed $want)"
  echo "OK $name $got"
  n=$((n + 1))
done
[ "$n" -gt 0 ] || fail "the statement lists no subjects"
case $names in *"${nl}report.json$nl"*) ;; *) fail "the statement does not cover report.json" ;; esac

# 6. Nothing else may sit in DIR: a file there reads as signed. Each entry is a signed file, a directory
#    on the way to one, the envelope or, at the top, the salt (a secret that opens the signed commitment).
shopt -s dotglob nullglob
uncovered=''
walk() {  # $1: a directory in DIR, $2: its path relative to DIR ('' or ending in /)
  local entry name signed
  [ -r "$1" ] && [ -x "$1" ] || fail "${2:-the directory $DIR} cannot be listed"
  for entry in "$1"/*; do
    name=$2${entry##*/}
    case $name in *[[:cntrl:]]*) uncovered+=" '$name'"; continue ;; esac
    case $names in *"$nl$name/"*) walk "$entry" "$name/"; continue ;; esac
    if [ -d "$entry" ]; then uncovered+=" '$name/'"; continue; fi
    case $names in *"$nl$name$nl"*) continue ;; esac
    case $name in report.dsse.json|deletion-commitment.salt) continue ;; esac
    for signed in "${subjects[@]}"; do  # a file a signed symlink leads to holds signed bytes
      [ ! "$entry" -ef "$DIR/$signed" ] || continue 2
    done
    uncovered+=" '$name'"
  done
}
walk "$DIR" ''
[ -z "$uncovered" ] || fail "the signature does not cover$uncovered: remove what is named or sign again" \
  "(only deletion-commitment.salt may be unsigned)"
echo "Verified: signature and $n file digest(s)."
