package console

// Lists reload themselves in the browser (static/refresh.js), with a
// button to pause; the server says which pages are lists and how often.
// Not a page that came back from a form (a reload would send the form
// again), nor the confirmation of a grant: those are not GETs.

// refreshPages are the pages that reload themselves; the Market page
// every 5 seconds (marketRefresh) unless Config.Refresh is shorter.
var refreshPages = map[string]bool{
	"overview": true, "account": true, "supply": true, "allowances": true, "caps": true, "rates": true,
	"report": true, "contracts": true, "contract": true, "audit": true, "market": true,
}
